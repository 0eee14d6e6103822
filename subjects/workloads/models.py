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
from torch.utils.data import Dataset
from transformers import EsmConfig, EsmForMaskedLM, GPT2Config, GPT2LMHeadModel

from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.proteins import generate_proteins
from proofbench.subjects.workloads.tokenizer import esm_fast

VOCAB_SIZE = 33
CLS_ID, PAD_ID, EOS_ID, MASK_ID = 0, 1, 2, 32
FIRST_RESIDUE_ID, LAST_RESIDUE_ID = 4, 23  # the 20 standard amino acids in ESM's vocabulary
MASK_FRACTION = 0.15
IGNORE = -100  # label value the transformers losses skip


def esm_config(hidden: int, layers: int, heads: int, seq: int) -> EsmConfig:
    """An ESM-2 style configuration (rotary positions, pre-LN), dropout off, for `seq` tokens."""
    return EsmConfig(vocab_size=VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, intermediate_size=4 * hidden,
                     max_position_embeddings=seq + 2, position_embedding_type="rotary",
                     pad_token_id=PAD_ID, mask_token_id=MASK_ID, emb_layer_norm_before=False,
                     token_dropout=False, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def esm_mlm(hidden: int, layers: int, heads: int, seq: int, seed: int = 0) -> EsmForMaskedLM:
    """An ESM-2 style masked language model with random weights."""
    torch.manual_seed(seed)
    return EsmForMaskedLM(esm_config(hidden, layers, heads, seq))


def gpt2_lm(hidden: int, layers: int, heads: int, seq: int, seed: int = 0) -> GPT2LMHeadModel:
    """A GPT-2 style causal language model over protein tokens, random weights."""
    config = GPT2Config(vocab_size=VOCAB_SIZE, n_positions=seq, n_embd=hidden, n_layer=layers, n_head=heads,
                        bos_token_id=CLS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(seed)
    return GPT2LMHeadModel(config)


class PackedProteins(Dataset):
    """Rows of `seq` tokens packed end to end from whole proteins, each row tokenized when asked for.

    Packing (as language-model pre-training does) leaves no padding, so every row has the
    same number of predicted tokens and a mean loss splits exactly into micro-batches. A row
    is an example for a causal LM: its labels are its own ids (the model shifts them).
    """

    def __init__(self, rows: int, seq: int) -> None:
        needed = rows * seq
        self.sequences = [p.sequence for p in generate_proteins(needed // 300 + 8)]
        ends = np.cumsum([len(s) + 2 for s in self.sequences])  # one token a residue, <cls> and <eos>
        if ends[-1] < needed:
            raise DeclarationError(f"PackedProteins: the proteins give {ends[-1]} tokens; expected {needed}")
        self.starts = np.concatenate([[0], ends[:-1]])
        self.rows, self.seq = rows, seq

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        begin, end = index * self.seq, (index + 1) * self.seq
        first = int(np.searchsorted(self.starts, begin, side="right")) - 1
        last = int(np.searchsorted(self.starts, end, side="left"))
        ids = [i for encoding in esm_fast()(self.sequences[first:last])["input_ids"] for i in encoding]
        offset = begin - int(self.starts[first])
        tokens = torch.tensor(ids[offset:offset + self.seq], dtype=torch.long)
        return {"input_ids": tokens, "labels": tokens}


def causal_lm_batches(count: int, batch: int, seq: int) -> list[dict[str, torch.Tensor]]:
    """`count` batches of `batch` x `seq` tokens: the rows of `PackedProteins`, in order."""
    rows = PackedProteins(count * batch, seq)
    return [{k: torch.stack([rows[i][k] for i in range(b * batch, (b + 1) * batch)]) for k in ("input_ids", "labels")}
            for b in range(count)]


def mlm_example(sequence: str, index: int, seq: int) -> dict[str, torch.Tensor]:
    """One masked-LM example: `sequence` tokenized, cut to `seq` tokens, 15% of residues masked."""
    return masked(esm_fast()(sequence, truncation=True, max_length=seq)["input_ids"], index)


def masked(token_ids: list[int], index: int) -> dict[str, torch.Tensor]:
    """One masked-LM example from a sequence's token ids: 15% of its residues masked.

    Which residues are masked depends only on `index` and the length, so a worker process and
    the main process produce the same example.
    """
    ids = torch.tensor(token_ids, dtype=torch.long)
    rng = np.random.default_rng([index, 15])
    chosen = rng.random(len(ids)) < MASK_FRACTION
    chosen[0] = chosen[-1] = False  # never mask <cls> / <eos>
    mask = torch.from_numpy(chosen)
    labels = torch.where(mask, ids, torch.full_like(ids, IGNORE))
    return {"input_ids": ids.masked_fill(mask, MASK_ID), "labels": labels}


def pad_collate(examples: list[dict[str, torch.Tensor]], length: int | None = None) -> dict[str, torch.Tensor]:
    """Pad a list of `mlm_example`s to the longest one (or to `length`); adds the attention mask."""
    longest = length or max(len(e["input_ids"]) for e in examples)
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
