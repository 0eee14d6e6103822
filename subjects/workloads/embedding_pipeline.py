"""Seed 001 end to end: protein embeddings from an ESM-2 encoder, batch after batch, as generate_embeddings.py does.

One call embeds every protein: tokenize a batch, pad it to its longest, run the encoder,
mean-pool over the real tokens (`workloads.esm_encoder`). The parts seed 001 turns on, each
done by the code of the subject that measures it alone:

- length_sorted: batches formed from length-sorted proteins, rows put back in file order
  (`inference.length_sorted_batches`);
- inference_mode: torch.inference_mode instead of torch.no_grad (`inference.half_precision`);
- bf16: the encoder's weights in bfloat16, the CPU's reduced precision (`inference.half_precision`;
  seed 001 uses fp16 on its GPU);
- compile: torch.compile, compiled and warmed on every batch shape in setup (`inference.compile`).

With every part off it is the plain script: proteins in file order, batches as read, fp32,
torch.no_grad (a competent script does not record a graph it never uses).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, ContextManager

import torch

from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.compiled_model import CompiledModel, compile_warm
from proofbench.subjects.workloads.esm_encoder import BatchedEmbeddings, ProteinEncoder, file_order, length_order
from proofbench.subjects.workloads.parts import (
    BF16_WEIGHTS,
    COMPILE_INFERENCE,
    FP16_WEIGHTS,
    INFERENCE_MODE,
    LENGTH_SORTED,
    TF32,
)

PARTS = (LENGTH_SORTED, INFERENCE_MODE, BF16_WEIGHTS, COMPILE_INFERENCE, FP16_WEIGHTS, TF32)


@dataclass
class EmbeddingWork:
    """The proteins in file order, the encoder, and what the measured variant needs ready:
    a bf16 copy of the encoder, and a compiled one (of the precision that variant runs in)."""

    encoder: ProteinEncoder
    sequences: tuple[str, ...]
    batch_size: int
    bf16: torch.nn.Module | None = None
    compiled: CompiledModel | None = None
    compiled_bf16: bool = False


@dataclass(frozen=True)
class Embedded:
    """One call's embeddings (with their token counts) and what ran."""

    embeddings: BatchedEmbeddings
    observed: dict[str, object]


def embedding_work(encoder: ProteinEncoder, sequences: tuple[str, ...], batch_size: int,
                   parts: frozenset[str]) -> EmbeddingWork:
    """The workload prepared for a variant with `parts` on (the bf16 copy and the compiled
    encoder only when it needs them: compiling takes seconds to minutes)."""
    work = EmbeddingWork(encoder, sequences, batch_size)
    if "bf16" in parts:
        work.bf16 = copy.deepcopy(encoder.model).to(torch.bfloat16)
    if "compile" in parts:
        model = work.bf16 if "bf16" in parts else encoder.model
        work.compiled = compile_warm(model, lambda module: _embed(parts, work, module), inference=False)
        work.compiled_bf16 = "bf16" in parts
    return work


def _grad_mode(parts: frozenset[str]) -> Callable[[], ContextManager]:
    return torch.inference_mode if "inference_mode" in parts else torch.no_grad


def _embed(parts: frozenset[str], work: EmbeddingWork, model: torch.nn.Module) -> BatchedEmbeddings:
    order = length_order(work.sequences) if "length_sorted" in parts else file_order(work.sequences)
    return work.encoder.embed_in_batches(work.sequences, order, work.batch_size, model=model,
                                         grad_mode=_grad_mode(parts))


def _model(parts: frozenset[str], work: EmbeddingWork) -> torch.nn.Module:
    if "compile" in parts:
        if work.compiled is None or work.compiled_bf16 != ("bf16" in parts):
            raise DeclarationError("a variant with compile on got a workload prepared without its compiled encoder; "
                                   "prepare it with that variant's parts")
        return work.compiled.module
    if "bf16" in parts:
        if work.bf16 is None:
            raise DeclarationError("a variant with bf16 on got a workload prepared without the bf16 encoder")
        return work.bf16
    return work.encoder.model


def run_embeddings(parts: frozenset[str], work: EmbeddingWork) -> Embedded:
    """One call of the pipeline with `parts` on (see the module docstring)."""
    model = _model(parts, work)
    out = _embed(parts, work, model)
    observed = {"order": "length" if "length_sorted" in parts else "file", "grad_mode": _grad_mode(parts).__name__,
                "dtype": str(next(model.parameters()).dtype),
                "compiled": isinstance(model, torch._dynamo.eval_frame.OptimizedModule)}
    return Embedded(out, observed)
