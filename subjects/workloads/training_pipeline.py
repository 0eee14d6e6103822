"""Seeds 002, 003 and 004 end to end: one training epoch fed by a DataLoader, each listed optimization a part.

The epoch visits packed protein rows (`models.PackedProteins`: tokenized when a row is asked
for, no padding) in one fixed shuffled order, through a DataLoader, and takes one AdamW step
per batch (`trainer.train`). Every part is done by the code of the subject that measures it
alone (see `workloads.parts`): autocast, torch.compile (`compiled_model.compile_warm`, in setup),
AdamW's fused kernel, micro-batches (`train(micro_batches=...)`), DataLoader workers started in
setup (`dataloading.make_loader`, `started`), activation checkpointing, seed 004's cached causal
mask (`attention.CachedMask`) and its memory queries (`trainer.memory_snapshot`).

Every variant trains on the same batches in the same order from the same weights, so the
equivalence is the loss of each step.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.attention import CachedMask, CausalLM, FreshMask, NextTokenLoss
from proofbench.subjects.workloads.compiled_model import CompiledModel, compile_warm
from proofbench.subjects.workloads.dataloading import make_loader, started
from proofbench.subjects.workloads.models import VOCAB_SIZE, PackedProteins, gpt2_lm
from proofbench.subjects.workloads.trainer import TrainingRun, checkpointing, memory_snapshot, observed_forward, train


@dataclass
class LoopWork:
    """A training run, the loaders that feed it, and what the measured variant needs ready.

    `inline` loads in this process; `workers` (started in setup) only when the variant has
    workers on; `compiled` only when it has compile on. `masks` is the causal-mask cache kept
    across calls (seed 004's model only); `logs_memory` marks a naive loop that queries
    memory after every step (seed 004's).
    """

    run: TrainingRun
    inline: DataLoader
    workers: DataLoader | None = None
    compiled: CompiledModel | None = None
    micro_batches: int = 1
    masks: CachedMask | None = None
    logs_memory: bool = False


@dataclass(frozen=True)
class LoopEpoch:
    """One call's losses per step, and what ran (memory snapshots taken included)."""

    losses: torch.Tensor
    observed: dict[str, object]


def gpt2_model(size: Any) -> torch.nn.Module:
    """Seeds 002 and 003's model: a GPT-2 style causal LM over protein tokens."""
    return gpt2_lm(size["hidden"], size["layers"], size["heads"], size["seq"])


def agi2_model(size: Any) -> torch.nn.Module:
    """Seed 004's model: the small causal LM whose mask can be cached, trained on the next token."""
    torch.manual_seed(0)
    return NextTokenLoss(CausalLM(VOCAB_SIZE, size["hidden"], size["layers"], size["heads"], size["seq"]))


def loop_work(model: torch.nn.Module, size: Any, device: str, parts: frozenset[str], *,
              logs_memory: bool = False) -> LoopWork:
    """The workload prepared for a variant with `parts` on: its worker loader started, its model
    compiled (both in setup, outside the timed calls)."""
    rows = PackedProteins(size["steps"] * size["batch"], size["seq"])
    order = np.random.default_rng(0).permutation(len(rows)).tolist()
    work = LoopWork(TrainingRun(model, [], device=device), make_loader(rows, order, size["batch"], 0),
                    micro_batches=size["micro"], logs_memory=logs_memory,
                    masks=CachedMask() if isinstance(model, NextTokenLoss) else None)
    if "workers" in parts:
        work.workers = started(make_loader(rows, order, size["batch"], size["workers"]))
    if "compile" in parts:
        work.compiled = compile_warm(model, lambda module: _epoch(parts, work, module), inference=False)
    return work


def _forward(parts: frozenset[str], work: LoopWork) -> torch.nn.Module:
    if "compile" not in parts:
        return work.run.model
    if work.compiled is None:
        raise DeclarationError("a variant with compile on got a workload prepared without its compiled model; "
                               "prepare it with that variant's parts")
    return work.compiled.module


def _loader(parts: frozenset[str], work: LoopWork) -> DataLoader:
    if "workers" not in parts:
        return work.inline
    if work.workers is None:
        raise DeclarationError("a variant with workers on got a workload prepared without its worker loader")
    return work.workers


def _epoch(parts: frozenset[str], work: LoopWork, forward: torch.nn.Module) -> LoopEpoch:
    run, log = work.run, []
    if work.masks is not None:
        run.model.lm.masks = work.masks if "mask_cache" in parts else FreshMask()
    every_step = work.logs_memory and "memory_queries" not in parts
    loader = _loader(parts, work)
    with checkpointing(run.model) if "checkpointing" in parts else nullcontext(), \
            observed_forward(forward, run.device) as seen:
        losses = train(run, forward=forward, batches=(b for b in loader),
                       autocast=torch.bfloat16 if "bf16" in parts else None,
                       optimizer={"fused": True} if "fused_optimizer" in parts else None,
                       micro_batches=work.micro_batches if "grad_accumulation" in parts else 1,
                       after_step=(lambda: log.append(memory_snapshot(run.device))) if every_step else None)
    if work.logs_memory and not every_step:
        log.append(memory_snapshot(run.device))  # once, at the end of the epoch
    seen.update(workers=loader.num_workers, compiled=forward is not run.model, memory_queries=len(log),
                micro_batches=work.micro_batches if "grad_accumulation" in parts else 1,
                fused="fused_optimizer" in parts, mask=type(run.model.lm.masks).__name__ if work.masks else None)
    return LoopEpoch(losses, seen)


def run_loop(parts: frozenset[str], work: LoopWork) -> LoopEpoch:
    """One epoch with `parts` on (see the module docstring)."""
    return _epoch(parts, work, _forward(parts, work))
