"""A small ESM-2-shaped protein encoder and batched embedding generation with it.

The model is transformers' real `EsmModel` built from a small config (ESM-2's vocabulary,
rotary positions and token dropout; 2 layers of width 64) with random weights from a fixed
seed, so it runs in milliseconds on one CPU thread and needs no download. Embedding
generation follows seed 001's `generate_embeddings.py`: tokenize a batch, pad it to its
longest sequence, run the encoder, mean-pool over real tokens. `order` decides which
proteins share a batch; results always come back in the input order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ContextManager, Sequence

import torch
from transformers import EsmConfig, EsmModel, PreTrainedTokenizerBase

from proofbench.subjects.workloads.minilm import mean_pool
from proofbench.subjects.workloads.tokenizer import esm_fast

SEED = 1001
ESM_CONFIG = dict(vocab_size=33, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=128, max_position_embeddings=1026, position_embedding_type="rotary",
                  pad_token_id=1, mask_token_id=32, token_dropout=True, emb_layer_norm_before=False)


@dataclass(frozen=True)
class BatchedEmbeddings:
    """Per-protein embeddings in input order, and what the padding cost."""

    values: torch.Tensor
    padded_tokens: int
    real_tokens: int


def file_order(sequences: Sequence[str]) -> list[int]:
    """The proteins in the order they were read."""
    return list(range(len(sequences)))


def length_order(sequences: Sequence[str]) -> list[int]:
    """The proteins from shortest to longest (ties keep file order)."""
    return sorted(range(len(sequences)), key=lambda i: len(sequences[i]))


@dataclass(frozen=True)
class ProteinEncoder:
    """The small ESM encoder, its tokenizer, and the device they run on."""

    model: EsmModel
    tokenizer: PreTrainedTokenizerBase
    device: str

    @classmethod
    def build(cls, device: str = "cpu", seed: int = SEED, **config: int) -> "ProteinEncoder":
        """Random weights drawn from `seed` (identical for the same seed), ESM's fast tokenizer.

        `config` overrides `ESM_CONFIG`'s shape (hidden_size, num_hidden_layers, ...).
        """
        torch.manual_seed(seed)
        model = EsmModel(EsmConfig(**{**ESM_CONFIG, **config}), add_pooling_layer=False)
        return cls(model.eval().to(device), esm_fast(), device)

    def embed_in_batches(self, sequences: Sequence[str], order: Sequence[int], batch_size: int, *,
                         model: torch.nn.Module | None = None,
                         grad_mode: Callable[[], ContextManager] = torch.inference_mode) -> BatchedEmbeddings:
        """Embed `sequences` in batches of `batch_size` taken in `order`; rows in input order.

        `model` replaces the encoder's own (a bf16 copy, a compiled wrapper); `grad_mode` is the
        context the forward passes run in (torch.no_grad for a plain script).
        """
        model = self.model if model is None else model
        rows: list[torch.Tensor | None] = [None] * len(sequences)
        padded = real = 0
        with grad_mode():
            for start in range(0, len(order), batch_size):
                chosen = order[start:start + batch_size]
                batch = self.tokenizer([sequences[i] for i in chosen], padding=True, return_tensors="pt")
                mask = batch["attention_mask"].to(self.device)
                output = model(input_ids=batch["input_ids"].to(self.device), attention_mask=mask)
                pooled = mean_pool(output.last_hidden_state, mask).float()
                for row, index in enumerate(chosen):
                    rows[index] = pooled[row]
                real += int(mask.sum())
                padded += mask.numel() - int(mask.sum())
        return BatchedEmbeddings(torch.stack(rows), padded_tokens=padded, real_tokens=real)
