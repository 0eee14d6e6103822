"""A small causal language model whose attention mask is either rebuilt or cached.

Seed 004 (AGI2) found its model rebuilding the causal mask on every forward pass although
the mask depends only on the sequence length and the device; it cached one mask per
`(length, device)`. `CausalLM` reproduces that model shape (token and position
embeddings, pre-LN blocks with explicit masked softmax attention) with the mask source
swappable: `FreshMask` builds it each forward, `CachedMask` keeps one per
`(length, device, dtype)`.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from transformers.modeling_outputs import CausalLMOutput


def causal_mask(length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask: 0 on and below the diagonal, -inf above (a token sees no later token)."""
    return torch.triu(torch.full((length, length), float("-inf"), device=device, dtype=dtype), diagonal=1)


class FreshMask:
    """Builds the causal mask anew on every call (the seed's starting point)."""

    def __call__(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return causal_mask(length, device, dtype)


class CachedMask:
    """Builds the causal mask once per `(length, device, dtype)` and reuses it."""

    def __init__(self) -> None:
        self._masks: dict[tuple[int, torch.device, torch.dtype], torch.Tensor] = {}

    def __call__(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        key = (length, device, dtype)
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = causal_mask(length, device, dtype)
        return mask

    def clear(self) -> None:
        """Forget every cached mask (after moving the model, for example)."""
        self._masks.clear()

    def __len__(self) -> int:
        return len(self._masks)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention with an explicit additive mask and softmax."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, hidden // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hidden // self.heads) + mask
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, length, hidden))


class Block(nn.Module):
    """A pre-LN transformer block: attention then a 4x MLP, each with a residual."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class CausalLM(nn.Module):
    """A GPT-style language model; `masks` decides how each forward gets its causal mask."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, max_length: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_length, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.masks: FreshMask | CachedMask = FreshMask()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        x = self.tokens(input_ids) + self.positions(torch.arange(length, device=input_ids.device))
        mask = self.masks(length, x.device, x.dtype)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


class NextTokenLoss(nn.Module):
    """A `CausalLM` trained on next-token prediction: `forward(input_ids, labels)` returns `.loss`,
    as transformers' language models do (so `workloads.trainer.train` drives both)."""

    def __init__(self, lm: CausalLM) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor, **unused: torch.Tensor) -> CausalLMOutput:
        logits = self.lm(input_ids)[:, :-1]
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels[:, 1:].reshape(-1))
        return CausalLMOutput(loss=loss)
