"""What this machine can run: each capability a variant may require, and why it is missing.

`missing(name, device)` returns None when the capability is present, else a one-line
reason that goes into the results and the report ("skipped: needs a CUDA device ...").
"""
from __future__ import annotations

import importlib.util
from typing import Callable


def _torch():
    import torch  # imported lazily: declaring subjects must not need torch

    return torch


def _cuda(device: str) -> str | None:
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    if not _torch().cuda.is_available():
        return "needs a CUDA device; torch.cuda.is_available() is False on this machine"
    if device != "cuda":
        return f"needs a CUDA device; this profile runs on {device!r}"
    return None


def _bf16(device: str) -> str | None:
    torch = _torch()
    if device == "cuda":
        return _cuda(device) or (None if torch.cuda.is_bf16_supported() else "this GPU has no bf16 support")
    return None  # CPU autocast supports bf16 on every x86-64 build of torch


def _compile(device: str) -> str | None:
    torch = _torch()
    if not hasattr(torch, "compile"):
        return "this torch has no torch.compile"
    if importlib.util.find_spec("triton") is None and device == "cuda":
        return "torch.compile on CUDA needs triton, which is not installed"
    import shutil

    if device == "cpu" and not (shutil.which("cc") or shutil.which("gcc") or shutil.which("g++")):
        return "torch.compile on CPU needs a C++ compiler; none on PATH"
    return None


def _flash_attention(device: str) -> str | None:
    reason = _cuda(device)
    if reason:
        return "flash attention " + reason
    major, _ = _torch().cuda.get_device_capability()
    return None if major >= 8 else "flash attention needs compute capability 8.0 or newer"


def _int8_cpu(device: str) -> str | None:
    torch = _torch()
    engines = getattr(torch.backends.quantized, "supported_engines", [])
    if not any(e in engines for e in ("fbgemm", "x86", "onednn", "qnnpack")):
        return f"no int8 quantized engine in this torch build (engines: {engines})"
    return None


def _torchao(device: str) -> str | None:
    if importlib.util.find_spec("torchao") is None:
        return "torchao is not installed"
    return None


CAPABILITIES: dict[str, Callable[[str], str | None]] = {
    "cuda": _cuda,
    "bf16": _bf16,
    "compile": _compile,
    "flash_attention": _flash_attention,
    "int8_cpu": _int8_cpu,
    "torchao": _torchao,
}


def missing(requirements: tuple[str, ...], device: str) -> str | None:
    """The first missing requirement's reason, or None when all are met."""
    for name in requirements:
        reason = CAPABILITIES[name](device)
        if reason:
            return reason
    return None
