"""Inference subjects: embedding generation made faster, each way checked against fp32 eager.

Every subject embeds the project's deterministic English (`workloads.sentences`) with the real
all-MiniLM-L6-v2 weights (`workloads.minilm`). Every variant returns mean-pooled embeddings,
compared with the baseline's by `workloads.quality`:

- `half_precision` (+ `half_precision_latency` at batch 1): fp32 with autograd on, the
  default a script starts from, vs inference_mode, bf16 autocast, bf16 weights, fp16 (GPU).
- `attention_kernel`: eager attention vs SDPA vs the flash kernel (GPU, bf16).
- `compile`: eager vs torch.compile (compiled and warmed up in prepare, outside the timing).

Serving-side optimizations of the same area (caching, batching) live in `subjects/serving.py`.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from proofbench import Context, Equivalence, Measure, Metric, Size, Skip, Subject, Variant, Workload, register
from proofbench.capability import missing
from proofbench.subjects.workloads import minilm
from proofbench.subjects.workloads.compiled_model import COMPILE_SECONDS, CompiledModel, compile_warm
from proofbench.subjects.workloads.quality import (
    HALF_PRECISION_COSINE,
    MAX_ABS_DIFF,
    MIN_COSINE,
    REORDER_TOLERANCE,
    max_abs_diff,
    min_cosine,
)

TOKENS = Metric("tokens", "tokens", higher_is_better=True)


def _tokens_of(inputs: Any, output: Any) -> float:
    return float(minilm.real_tokens(inputs.batch))


def sentences_of(n: int, join: int = 1) -> list[str]:
    """`n` texts, each `join` generated sentences long (join=1: one sentence)."""
    raw = minilm.distinct_sentences(n * join)
    return [" ".join(raw[i * join:(i + 1) * join]) for i in range(n)]


# -- half precision -------------------------------------------------------------------

@dataclass(frozen=True)
class PrecisionInputs:
    """One tokenized batch and the model in each precision (fp16 only on a GPU)."""

    fp32: torch.nn.Module
    bf16: torch.nn.Module
    fp16: torch.nn.Module | None
    batch: dict[str, torch.Tensor]
    device: str


def _prepare_precision(ctx: Context) -> Workload:
    texts = sentences_of(ctx.size["n"], ctx.size.get("join", 1))
    fp32 = minilm.load_model(device=ctx.device)
    fp16 = copy.deepcopy(fp32).to(torch.float16) if ctx.device == "cuda" else None
    batch = minilm.tokenize(minilm.load_tokenizer(), texts, ctx.device)
    return Workload(PrecisionInputs(fp32, copy.deepcopy(fp32).to(torch.bfloat16), fp16, batch, ctx.device),
                    items=len(texts))


def _fp32_autograd(inputs: PrecisionInputs) -> torch.Tensor:
    # No inference_mode/no_grad: autograd records the graph, as a plain script does.
    return minilm.embed(inputs.fp32, inputs.batch).detach()


def _fp32_inference_mode(inputs: PrecisionInputs) -> torch.Tensor:
    with torch.inference_mode():
        return minilm.embed(inputs.fp32, inputs.batch)


def _bf16_autocast(inputs: PrecisionInputs) -> torch.Tensor:
    with torch.inference_mode(), torch.autocast(inputs.device, dtype=torch.bfloat16):
        return minilm.embed(inputs.fp32, inputs.batch)


def _bf16_weights(inputs: PrecisionInputs) -> torch.Tensor:
    with torch.inference_mode():
        return minilm.embed(inputs.bf16, inputs.batch)


def _fp16_weights(inputs: PrecisionInputs) -> torch.Tensor:
    if inputs.fp16 is None:
        raise Skip("fp16 weights are built only on a CUDA device")
    with torch.inference_mode():
        return minilm.embed(inputs.fp16, inputs.batch)


_PRECISION_VARIANTS = (
    Variant("baseline", _fp32_autograd, "fp32, autograd on (no inference_mode)"),
    Variant("inference_mode", _fp32_inference_mode, "fp32 under torch.inference_mode"),
    Variant("bf16_autocast", _bf16_autocast, "inference_mode + autocast to bf16, fp32 weights", requires=("bf16",)),
    Variant("bf16", _bf16_weights, "inference_mode + bf16 weights", requires=("bf16",)),
    Variant("fp16", _fp16_weights, "inference_mode + fp16 weights (GPU)", requires=("cuda",)),
)
_HALF_EQUIVALENCE = Equivalence(
    MIN_COSINE, HALF_PRECISION_COSINE, min_cosine,
    "lowest per-sentence cosine similarity to fp32 >= 0.999: half precision keeps ~3 digits; "
    "a sentence turned by more than 2.6 degrees is a changed answer (seed: 'minimal impact')")

register(Subject(
    area="inference", name="half_precision", item="sentence",
    description="MiniLM embeddings of a sentence batch: fp32 autograd vs inference_mode, bf16, fp16",
    prepare=_prepare_precision, variants=_PRECISION_VARIANTS, equivalence=_HALF_EQUIVALENCE,
    sizes=(Size.of("tiny", n=4), Size.of("small", n=8), Size.of("large", n=256)),
    measures=(Measure(TOKENS, _tokens_of, rate=True),), track_memory=True,
    notes="throughput at a batch; batch-1 latency percentiles are inference.half_precision_latency",
))
register(Subject(
    area="inference", name="half_precision_latency", item="sentence",
    description="MiniLM embedding of one request (batch 1): per-call latency samples give p50/p99",
    prepare=_prepare_precision, variants=_PRECISION_VARIANTS, equivalence=_HALF_EQUIVALENCE,
    sizes=(Size.of("tiny", n=1), Size.of("small", n=1, join=2), Size.of("large", n=1, join=8)),
    measures=(Measure(TOKENS, _tokens_of, rate=True),),
    notes="latency percentiles come from asv's raw per-call samples (--record-samples)",
))


# -- attention kernel -----------------------------------------------------------------

@dataclass(frozen=True)
class AttentionInputs:
    """Fixed-length batch (no padding) and MiniLM built with each attention implementation."""

    eager: torch.nn.Module
    sdpa: torch.nn.Module
    flash: torch.nn.Module | None
    batch: dict[str, torch.Tensor]


def _prepare_attention(ctx: Context) -> Workload:
    length, n = ctx.size["length"], ctx.size["n"]
    # Each text has more than `length` tokens (a sentence is at least 6), so truncation
    # gives every row exactly `length`: no padding mask, which the flash kernel refuses.
    texts = sentences_of(n, join=length // 5 + 1)
    batch = minilm.tokenize(minilm.load_tokenizer(), texts, ctx.device, max_length=length)
    sdpa = minilm.load_model("sdpa", ctx.device)
    flash = None
    if ctx.device == "cuda" and missing(("flash_attention",), ctx.device) is None:
        flash = copy.deepcopy(sdpa).to(torch.bfloat16)  # the flash kernel runs in fp16/bf16 only
    return Workload(AttentionInputs(minilm.load_model("eager", ctx.device), sdpa, flash, batch), items=n)


def _eager_attention(inputs: AttentionInputs) -> torch.Tensor:
    with torch.inference_mode():
        return minilm.embed(inputs.eager, inputs.batch)


def _sdpa_attention(inputs: AttentionInputs) -> torch.Tensor:
    with torch.inference_mode():
        return minilm.embed(inputs.sdpa, inputs.batch)


def _flash_attention(inputs: AttentionInputs) -> torch.Tensor:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if inputs.flash is None:
        raise Skip("the flash model is built only on a CUDA device with flash attention")
    # Only the flash backend is allowed: a silent fallback to another kernel would fail here.
    with torch.inference_mode(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return minilm.embed(inputs.flash, inputs.batch)


register(Subject(
    area="inference", name="attention_kernel", item="sequence",
    description="MiniLM on fixed-length sequences: eager attention vs SDPA vs the flash kernel (bf16, GPU)",
    prepare=_prepare_attention,
    variants=(Variant("baseline", _eager_attention, 'attn_implementation="eager", fp32'),
              Variant("sdpa", _sdpa_attention, 'attn_implementation="sdpa", fp32'),
              Variant("flash", _flash_attention, "SDPA restricted to the flash kernel, bf16 weights",
                      requires=("flash_attention",))),
    equivalence=Equivalence(
        MIN_COSINE, HALF_PRECISION_COSINE, min_cosine,
        "lowest per-sequence cosine similarity to eager fp32 >= 0.999: the flash kernel runs only in "
        "half precision, so the half-precision bound applies (SDPA in fp32 lands at ~1 - 1e-7)"),
    sizes=(Size.of("tiny", n=2, length=32), Size.of("small", n=4, length=128),
           Size.of("large", n=16, length=512)),
    measures=(Measure(TOKENS, _tokens_of, rate=True),),
))


# -- torch.compile --------------------------------------------------------------------

@dataclass(frozen=True)
class CompileInputs:
    """The eager model, its compiled wrapper (None where compile is unavailable), one batch."""

    eager: torch.nn.Module
    compiled: CompiledModel | None
    batch: dict[str, torch.Tensor]


@dataclass(frozen=True)
class CompiledEmbeddings:
    """Embeddings, and the seconds the variant's model took to compile before any timing."""

    values: torch.Tensor
    compile_seconds: float


def _prepare_compile(ctx: Context) -> Workload:
    texts = sentences_of(ctx.size["n"])
    model = minilm.load_model(device=ctx.device)
    batch = minilm.tokenize(minilm.load_tokenizer(), texts, ctx.device)
    compiled = None
    # Compiling takes tens of seconds: only the process that measures the compiled variant does it.
    if ctx.variant == "compiled" and missing(("compile",), ctx.device) is None:
        compiled = compile_warm(model, lambda module: minilm.embed(module, batch))
    return Workload(CompileInputs(model, compiled, batch), items=len(texts))


def _eager(inputs: CompileInputs) -> CompiledEmbeddings:
    with torch.inference_mode():
        return CompiledEmbeddings(minilm.embed(inputs.eager, inputs.batch), 0.0)


def _compiled(inputs: CompileInputs) -> CompiledEmbeddings:
    if inputs.compiled is None:
        raise Skip("torch.compile is not available on this machine")
    with torch.inference_mode():
        return CompiledEmbeddings(minilm.embed(inputs.compiled.module, inputs.batch),
                                  inputs.compiled.compile_seconds)


register(Subject(
    area="inference", name="compile", item="sentence",
    description="MiniLM embeddings under inference_mode: eager vs torch.compile (compiled in setup)",
    prepare=_prepare_compile,
    variants=(Variant("baseline", _eager, "eager, fp32, inference_mode"),
              Variant("compiled", _compiled, "torch.compile(model), default mode, warmed up in setup",
                      requires=("compile",))),
    equivalence=Equivalence(MAX_ABS_DIFF, REORDER_TOLERANCE,
                            lambda a, b: max_abs_diff(a.values, b.values),
                            "max abs difference <= 1e-4: compiled kernels fuse and reorder float32 "
                            "arithmetic (~1e-6) but must compute the same embeddings"),
    sizes=(Size.of("tiny", n=2), Size.of("small", n=8), Size.of("large", n=256)),
    measures=(Measure(COMPILE_SECONDS, lambda inputs, out: out.compile_seconds),),
    timeout=600.0,
    notes="Setup (of the compiled variant only) compiles and warms the model; compile_seconds is the first "
          "call's time minus a warm call's (inductor cache in the project's work directory).",
))
