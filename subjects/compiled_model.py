"""A model put through torch.compile and warmed up before anything is timed.

Compiling happens on the first call; on a CPU with a cold cache it takes tens of seconds,
which belongs to setup, not to the per-call time. `compile_warm` compiles, runs the
compiled model once more so the timed calls start warm, and reports the seconds the first
call took. Inductor's cache lives under `<repo>/.proofbench/inductor-cache` unless
TORCHINDUCTOR_CACHE_DIR is already set, so later processes reuse the compiled kernels.
A failure to compile is raised as `Skip` with the first line of the error: on that machine
the compiled variant cannot run, and the report says why.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from proofbench.errors import Skip

INDUCTOR_CACHE = Path(__file__).resolve().parent.parent / ".proofbench" / "inductor-cache"


@dataclass(frozen=True)
class CompiledModel:
    """The compiled module and the seconds its first (compiling) call took."""

    module: torch.nn.Module
    compile_seconds: float


def compile_warm(model: torch.nn.Module, first_call: Callable[[torch.nn.Module], object]) -> CompiledModel:
    """torch.compile `model`, then call `first_call(compiled)` twice under inference_mode."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(INDUCTOR_CACHE))
    started = time.perf_counter()
    try:
        compiled = torch.compile(model)
        with torch.inference_mode():
            first_call(compiled)
            seconds = time.perf_counter() - started
            first_call(compiled)
    except Exception as exc:  # noqa: BLE001 - any failure to compile is this machine's finding
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise Skip(f"torch.compile failed: {type(exc).__name__}: {first_line}") from exc
    return CompiledModel(compiled, seconds)
