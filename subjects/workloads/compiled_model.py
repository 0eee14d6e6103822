"""A model put through torch.compile and warmed up before anything is timed.

Compiling happens on the first call; on a CPU with a cold cache it takes tens of seconds,
which belongs to setup, not to the per-call time. `compile_warm` compiles, calls the compiled
model twice, and reports `compile_seconds`, the first call's time minus the second's: what
compiling added, the call's own work left out (the same definition for every subject). The
clock is read once the GPU's queued kernels are done, so they count in the call that launched
them, not in the next one. The
inductor cache is wherever $TORCHINDUCTOR_CACHE_DIR points (`proofbench run` sets it to the
project's work directory, so a later run compiles from cache). A failure to compile is raised
as `Skip` with the first line of the error: on that machine the compiled variant cannot run,
and the report says why.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Callable

import torch

from proofbench import Metric, Skip

COMPILE_SECONDS = Metric("compile_seconds", "seconds", higher_is_better=False)


@dataclass(frozen=True)
class CompiledModel:
    """The compiled module and the seconds compiling added to its first call."""

    module: torch.nn.Module
    compile_seconds: float


def _synchronised() -> float:
    # a CUDA call returns while its kernels are still queued: wait for them, then read the time
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter()


def compile_warm(model: torch.nn.Module, call: Callable[[torch.nn.Module], object], *,
                 inference: bool = True, clock: Callable[[], float] = _synchronised) -> CompiledModel:
    """torch.compile `model`, then `call(compiled)` twice (under inference_mode when `inference`),
    each call timed on `clock` (by default `time.perf_counter` read after a CUDA synchronise)."""
    try:
        compiled = torch.compile(model)
        with torch.inference_mode() if inference else contextlib.nullcontext():
            started = clock()
            call(compiled)  # the first call compiles (forward, and backward when training)
            first = clock() - started
            started = clock()
            call(compiled)  # a warm call: what every later call costs
            warm = clock() - started
    except Exception as exc:  # noqa: BLE001 - any failure to compile is this machine's finding
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise Skip(f"torch.compile failed on this machine: {type(exc).__name__}: {first_line}") from exc
    return CompiledModel(compiled, max(0.0, first - warm))
