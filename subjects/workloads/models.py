"""Small transformers models and the protein batches they train on, built without downloads.

The training subjects use real transformers model classes (`EsmForMaskedLM`, and a GPT-2
style `GPT2LMHeadModel` over the same 33-token protein vocabulary, like a protein GPT)
built from small configs with random weights drawn from a fixed seed. Dropout is off so
that an equivalence check compares arithmetic alone. Batches come from the deterministic
synthetic proteins, tokenized with the project's ESM tokenizer.
"""
from __future__ import annotations

import numpy as np
import torch
from transformers import EsmConfig, EsmForMaskedLM, GPT2Config, GPT2LMHeadModel

from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.proteins import generate_proteins
from proofbench.subjects.workloads.tokenizer import esm_fast

VOCAB_SIZE = 33
CLS_ID, PAD_ID, EOS_ID, MASK_ID = 0, 1, 2, 32
FIRST_RESIDUE_ID, LAST_RESIDUE_ID = 4, 23  # the 20 standard amino acids in ESM's vocabulary
MASK_FRACTION = 0.15
IGNORE = -100  # label value the transformers losses skip


def esm_mlm(hidden: int, layers: int, heads: int, seq: int, seed: int = 0) -> EsmForMaskedLM:
    """An ESM-2 style masked language model (rotary positions, pre-LN) with random weights."""
    config = EsmConfig(vocab_size=VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                       num_attention_heads=heads, intermediate_size=4 * hidden,
                       max_position_embeddings=seq + 2, position_embedding_type="rotary",
                       pad_token_id=PAD_ID, mask_token_id=MASK_ID, emb_layer_norm_before=False,
                       token_dropout=False, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(seed)
    return EsmForMaskedLM(config)


def gpt2_lm(hidden: int, layers: int, heads: int, seq: int, seed: int = 0) -> GPT2LMHeadModel:
    """A GPT-2 style causal language model over protein tokens, random weights."""
    config = GPT2Config(vocab_size=VOCAB_SIZE, n_positions=seq, n_embd=hidden, n_layer=layers, n_head=heads,
                        bos_token_id=CLS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(seed)
    return GPT2LMHeadModel(config)


def causal_lm_batches(count: int, batch: int, seq: int) -> list[dict[str, torch.Tensor]]:
    """`count` batches of `batch` x `seq` tokens, packed end to end from whole proteins.

    Packing (as language-model pre-training does) leaves no padding, so every row has the
    same number of predicted tokens and a mean loss splits exactly into micro-batches.
    """
    needed = count * batch * seq
    proteins = generate_proteins(needed // 300 + 8)
    ids = [i for encoding in esm_fast()([p.sequence for p in proteins])["input_ids"] for i in encoding]
    if len(ids) < needed:
        raise DeclarationError(f"causal_lm_batches: the proteins gave {len(ids)} tokens; expected {needed}")
    tokens = torch.tensor(ids[:needed], dtype=torch.long).view(count, batch, seq)
    return [{"input_ids": t, "labels": t} for t in tokens]


def mlm_example(sequence: str, index: int, seq: int) -> dict[str, torch.Tensor]:
    """One masked-LM example: `sequence` tokenized, cut to `seq` tokens, 15% of residues masked.

    Which residues are masked depends only on `index`, so a worker process and the main
    process produce the same example.
    """
    ids = torch.tensor(esm_fast()(sequence, truncation=True, max_length=seq)["input_ids"], dtype=torch.long)
    rng = np.random.default_rng([index, 15])
    chosen = rng.random(len(ids)) < MASK_FRACTION
    chosen[0] = chosen[-1] = False  # never mask <cls> / <eos>
    mask = torch.from_numpy(chosen)
    labels = torch.where(mask, ids, torch.full_like(ids, IGNORE))
    return {"input_ids": ids.masked_fill(mask, MASK_ID), "labels": labels}


def pad_collate(examples: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Pad a list of `mlm_example`s to the longest one; adds the attention mask."""
    longest = max(len(e["input_ids"]) for e in examples)
    input_ids = torch.full((len(examples), longest), PAD_ID, dtype=torch.long)
    labels = torch.full((len(examples), longest), IGNORE, dtype=torch.long)
    attention = torch.zeros((len(examples), longest), dtype=torch.long)
    for row, example in enumerate(examples):
        n = len(example["input_ids"])
        input_ids[row, :n] = example["input_ids"]
        labels[row, :n] = example["labels"]
        attention[row, :n] = 1
    return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}


def mlm_batches(count: int, batch: int, seq: int) -> list[dict[str, torch.Tensor]]:
    """`count` padded masked-LM batches of `batch` proteins cut to at most `seq` tokens."""
    proteins = generate_proteins(count * batch)
    examples = [mlm_example(p.sequence, i, seq) for i, p in enumerate(proteins)]
    return [pad_collate(examples[i:i + batch]) for i in range(0, count * batch, batch)]
