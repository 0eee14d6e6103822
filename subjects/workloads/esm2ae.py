"""A small ESM2AE: an ESM-2 style encoder, a bias-free bottleneck per residue, and a token head.

Seed 000's ESM2AE puts an encoder/decoder of bias-free Linear layers ("hidden_dims=[768, 512,
256, 128]") after an ESM-2 backbone. This one keeps that shape at a small size, with random
weights from a fixed seed: transformers' `EsmModel` (see `workloads.models.esm_config`), then
hidden -> hidden/2 -> bottleneck -> hidden/2 -> hidden, then a head over the 33 ESM tokens. It
trains as a masked autoencoder: the loss is the cross-entropy of the masked residues, which
must pass through the bottleneck. Activation checkpointing is the backbone's (transformers').
"""
from __future__ import annotations

import torch
from torch import nn
from transformers import EsmModel
from transformers.modeling_outputs import MaskedLMOutput

from proofbench.subjects.workloads.models import IGNORE, VOCAB_SIZE, esm_config


class Esm2AE(nn.Module):
    """The autoencoder: `forward(input_ids, attention_mask, labels)` returns the masked-token loss."""

    def __init__(self, hidden: int, layers: int, heads: int, bottleneck: int, seq: int, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.backbone = EsmModel(esm_config(hidden, layers, heads, seq), add_pooling_layer=False)
        half = hidden // 2
        self.encoder = nn.Sequential(nn.Linear(hidden, half, bias=False), nn.GELU(),
                                     nn.Linear(half, bottleneck, bias=False))
        self.decoder = nn.Sequential(nn.Linear(bottleneck, half, bias=False), nn.GELU(),
                                     nn.Linear(half, hidden, bias=False))
        self.head = nn.Linear(hidden, VOCAB_SIZE)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                labels: torch.Tensor) -> MaskedLMOutput:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        logits = self.head(self.decoder(self.encoder(hidden)))
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB_SIZE).float(), labels.reshape(-1),
                                           ignore_index=IGNORE)
        return MaskedLMOutput(loss=loss)

    def activation_checkpointing_enable(self, **options: object) -> None:
        """Recompute the backbone's layers in the backward pass (transformers' checkpointing)."""
        self.backbone.activation_checkpointing_enable(**options)

    def activation_checkpointing_disable(self) -> None:
        """Keep every activation again."""
        self.backbone.activation_checkpointing_disable()

    @property
    def is_activation_checkpointing(self) -> bool:
        """Whether the backbone recomputes its layers in the backward pass."""
        return self.backbone.is_activation_checkpointing


def evaluation_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> float:
    """The model's loss on a held-out batch, in fp32 without gradients."""
    with torch.no_grad():
        return float(model(**batch).loss)
