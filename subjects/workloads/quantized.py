"""int8 copies of a model, and how many bytes a model's weights take when saved.

Quantized kernels here are CPU kernels (fbgemm/x86/onednn). torch 2.13 warns that
torch.ao.quantization is deprecated in favour of torchao; the warning is left visible.
"""
from __future__ import annotations

import io

import torch


def dynamic_int8(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of `model` whose Linear layers are dynamic int8 (weights int8, activations quantized per call)."""
    return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def serialized_bytes(model: torch.nn.Module) -> int:
    """The size of `model`'s state_dict as torch.save writes it (packed int8 weights included)."""
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.tell()
