"""Inference subjects: embedding generation made faster, each way checked against fp32 eager.

All sentence subjects embed the project's deterministic English (`subjects.sentences`) with
the real all-MiniLM-L6-v2 weights (`subjects.minilm`); the protein subject uses a small ESM
encoder (`subjects.esm_encoder`) on the synthetic proteins. Every variant returns
mean-pooled embeddings, compared with the baseline's by `subjects.quality`:

- `half_precision` (+ `half_precision_latency` at batch 1): fp32 with autograd on, the
  default a script starts from, vs inference_mode, bf16 autocast, bf16 weights, fp16 (GPU).
- `attention_kernel`: eager attention vs SDPA vs the flash kernel (GPU, bf16).
- `compile`: eager vs torch.compile (compiled and warmed up in prepare, outside the timing).
- `embedding_cache` (+ `embedding_cache_miss`): recompute every request vs an LRU cache.
- `length_sorted_batches`: protein batches in file order vs sorted by length (seed 001).
- `request_batching`: one request at a time vs dynamic batching of concurrent clients.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from proofbench import capability
from proofbench.declare import (
    Context,
    Equivalence,
    Measure,
    Metric,
    Size,
    Subject,
    Variant,
    Workload,
)
from proofbench.errors import Skip
from proofbench.registry import register
from proofbench.subjects import minilm
from proofbench.subjects.compiled_model import CompiledModel, compile_warm
from proofbench.subjects.embedding_cache import EmbeddingCache, repeating_stream
from proofbench.subjects.esm_encoder import (
    BatchedEmbeddings,
    ProteinEncoder,
    file_order,
    length_order,
)
from proofbench.subjects.proteins import generate_proteins
from proofbench.subjects.quality import (
    MAX_ABS_DIFF,
    MIN_COSINE,
    max_abs_diff,
    min_cosine,
)
from proofbench.subjects.request_batcher import DynamicBatcher, ServedStream, serve

TOKENS = Metric("tokens", "tokens", higher_is_better=True)
# Half precision keeps about 3 significant digits; an embedding turned by more than 2.6
# degrees (cosine 0.999) from fp32 is a changed answer, not rounding: the seed promises
# "minimal impact" on quality.
HALF_PRECISION_COSINE = 0.999
# Same numbers up to float32 summation order: shapes differ between variants (padding,
# batch size), which moves results by ~1e-6; 1e-4 is far below any real change.
REORDER_TOLERANCE = 1e-4


def _tokens_of(inputs: Any, output: Any) -> float:
    return float(minilm.real_tokens(inputs.batch))


def _texts(n: int, join: int = 1) -> list[str]:
    # `n` texts, each `join` generated sentences long (join=1: one sentence).
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
    texts = _texts(ctx.size["n"], ctx.size.get("join", 1))
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
    texts = _texts(n, join=length // 5 + 1)
    batch = minilm.tokenize(minilm.load_tokenizer(), texts, ctx.device, max_length=length)
    sdpa = minilm.load_model("sdpa", ctx.device)
    flash = None
    if ctx.device == "cuda" and capability.missing(("flash_attention",), ctx.device) is None:
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
    texts = _texts(ctx.size["n"])
    model = minilm.load_model(device=ctx.device)
    batch = minilm.tokenize(minilm.load_tokenizer(), texts, ctx.device)
    compiled = None
    # Compiling takes tens of seconds: only the process that measures the compiled variant does it.
    if ctx.variant == "compiled" and capability.missing(("compile",), ctx.device) is None:
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
    measures=(Measure(Metric("compile_seconds", "seconds", higher_is_better=False),
                      lambda inputs, out: out.compile_seconds),),
    timeout=600.0,
    notes="compile cache: $TORCHINDUCTOR_CACHE_DIR, default <repo>/.proofbench/inductor-cache; setup "
          "compiles in every variant's process because prepare does not know the variant",
))


# -- embedding cache ------------------------------------------------------------------

@dataclass(frozen=True)
class StreamInputs:
    """A request stream (one text per request), the encoder, and the cache bound."""

    encoder: minilm.Encoder
    stream: tuple[str, ...]
    capacity: int


@dataclass(frozen=True)
class StreamEmbeddings:
    """One embedding per request, in stream order, and the cache's counters for the call."""

    values: torch.Tensor
    hits: int
    misses: int
    cache_bytes: int


def _prepare_stream(ctx: Context) -> Workload:
    n = ctx.size["n"]
    stream = repeating_stream(minilm.distinct_sentences(n), n, ctx.size["repeat_rate"])
    inputs = StreamInputs(minilm.Encoder.load(ctx.device), tuple(stream), ctx.size["capacity"])
    return Workload(inputs, items=len(stream))


def _recompute(inputs: StreamInputs) -> StreamEmbeddings:
    rows = [inputs.encoder.embed_text(text) for text in inputs.stream]
    return StreamEmbeddings(torch.stack(rows), hits=0, misses=len(rows), cache_bytes=0)


def _lru_cached(inputs: StreamInputs) -> StreamEmbeddings:
    cache = EmbeddingCache(inputs.capacity)  # empty at every call, so calls repeat exactly
    rows = [cache.get_or_compute(text, inputs.encoder.embed_text) for text in inputs.stream]
    stats = cache.stats()
    return StreamEmbeddings(torch.stack(rows), stats.hits, stats.misses, stats.value_bytes)


_CACHE_KWARGS = dict(
    item="request", prepare=_prepare_stream,
    variants=(Variant("baseline", _recompute, "embed every request (batch 1, inference_mode)"),
              Variant("lru_cache", _lru_cached, "LRU cache keyed by SHA-256 of the text, 1000 entries")),
    equivalence=Equivalence(MAX_ABS_DIFF, 1e-6, lambda a, b: max_abs_diff(a.values, b.values),
                            "max abs difference <= 1e-6: a hit returns the embedding computed for the "
                            "same text with the same shapes, so it must be the recomputed value"),
    measures=(Measure(Metric("hit_rate", "fraction", higher_is_better=True),
                      lambda inputs, out: out.hits / max(1, out.hits + out.misses)),
              Measure(Metric("cache_bytes", "bytes", higher_is_better=False),
                      lambda inputs, out: float(out.cache_bytes))),
)
register(Subject(
    name="embedding_cache", area="inference",
    description="request stream with 50% repeats: recompute every request vs an LRU embedding cache",
    sizes=(Size.of("tiny", n=8, repeat_rate=0.5, capacity=1000),
           Size.of("small", n=16, repeat_rate=0.5, capacity=1000),
           Size.of("large", n=2000, repeat_rate=0.5, capacity=1000)),
    notes="1,000 entries as the seed's cache; the 1,000 distinct requests of size large fill it exactly",
    **_CACHE_KWARGS,
))
register(Subject(
    name="embedding_cache_miss", area="inference",
    description="request stream with no repeats: what the LRU cache costs when it never hits",
    sizes=(Size.of("tiny", n=8, repeat_rate=0.0, capacity=1000),
           Size.of("small", n=16, repeat_rate=0.0, capacity=1000),
           Size.of("large", n=2000, repeat_rate=0.0, capacity=1000)),
    **_CACHE_KWARGS,
))


# -- length-sorted protein batches ----------------------------------------------------

@dataclass(frozen=True)
class ProteinInputs:
    """Protein sequences in file order and the ESM encoder."""

    encoder: ProteinEncoder
    sequences: tuple[str, ...]
    batch_size: int


def _prepare_proteins(ctx: Context) -> Workload:
    sequences = tuple(r.sequence for r in generate_proteins(ctx.size["n"]))
    inputs = ProteinInputs(ProteinEncoder.build(ctx.device), sequences, ctx.size["batch_size"])
    return Workload(inputs, items=len(sequences))


def _file_order_batches(inputs: ProteinInputs) -> BatchedEmbeddings:
    return inputs.encoder.embed_in_batches(inputs.sequences, file_order(inputs.sequences), inputs.batch_size)


def _length_sorted_batches(inputs: ProteinInputs) -> BatchedEmbeddings:
    return inputs.encoder.embed_in_batches(inputs.sequences, length_order(inputs.sequences), inputs.batch_size)


register(Subject(
    area="inference", name="length_sorted_batches", item="protein",
    description="ESM protein embeddings, padded per batch: batches in file order vs sorted by length",
    prepare=_prepare_proteins,
    variants=(Variant("baseline", _file_order_batches, "batches in file order, padded to their longest"),
              Variant("length_sorted", _length_sorted_batches, "sorted by length, batched, re-ordered back")),
    equivalence=Equivalence(MAX_ABS_DIFF, REORDER_TOLERANCE, lambda a, b: max_abs_diff(a.values, b.values),
                            "max abs difference <= 1e-4 per protein, in input order: padding is masked, "
                            "so only float32 summation order may differ"),
    sizes=(Size.of("tiny", n=8, batch_size=4), Size.of("small", n=32, batch_size=8),
           Size.of("large", n=1024, batch_size=16)),
    measures=(Measure(Metric("padded_tokens", "tokens", higher_is_better=False),
                      lambda inputs, out: float(out.padded_tokens)),
              Measure(TOKENS, lambda inputs, out: float(out.real_tokens), rate=True)),
))


# -- request batching -----------------------------------------------------------------

@dataclass(frozen=True)
class ServingInputs:
    """Each concurrent client's requests (texts), the encoder, and the batching limits."""

    encoder: minilm.Encoder
    clients: tuple[tuple[str, ...], ...]
    max_batch: int
    max_wait: float


def _prepare_serving(ctx: Context) -> Workload:
    clients, per_client = ctx.size["clients"], ctx.size["per_client"]
    texts = minilm.distinct_sentences(clients * per_client)
    grouped = tuple(tuple(texts[c * per_client:(c + 1) * per_client]) for c in range(clients))
    inputs = ServingInputs(minilm.Encoder.load(ctx.device), grouped, ctx.size["max_batch"], ctx.size["max_wait"])
    return Workload(inputs, items=len(texts))


def _handler(inputs: ServingInputs):
    # The worker thread's model call: inference_mode is thread-local, so Encoder sets it there.
    return lambda texts: list(inputs.encoder.embed_texts(texts))


def _one_at_a_time(inputs: ServingInputs) -> ServedStream:
    return serve(DynamicBatcher(_handler(inputs), max_batch=1, max_wait=0.0), inputs.clients)


def _dynamic_batching(inputs: ServingInputs) -> ServedStream:
    return serve(DynamicBatcher(_handler(inputs), inputs.max_batch, inputs.max_wait), inputs.clients)


def _latency(q: float, inputs: ServingInputs, out: ServedStream) -> float:
    return float(np.percentile(out.latencies, q))


register(Subject(
    area="inference", name="request_batching", item="request",
    description="concurrent clients (threads) embedding sentences: one request at a time vs dynamic batching",
    prepare=_prepare_serving,
    variants=(Variant("baseline", _one_at_a_time, "one worker answers one request at a time"),
              Variant("dynamic_batching", _dynamic_batching, "one worker batches waiting requests "
                      "(max_batch, max_wait from the size)")),
    equivalence=Equivalence(MAX_ABS_DIFF, REORDER_TOLERANCE,
                            lambda a, b: max_abs_diff(torch.stack(a.responses), torch.stack(b.responses)),
                            "every response, to its own caller, within 1e-4 of the unbatched one: padding "
                            "is masked, so only float32 summation order may differ"),
    sizes=(Size.of("tiny", clients=2, per_client=2, max_batch=4, max_wait=0.002),
           Size.of("small", clients=8, per_client=2, max_batch=8, max_wait=0.002),
           Size.of("large", clients=16, per_client=32, max_batch=16, max_wait=0.005)),
    measures=(Measure(Metric("latency_p50", "seconds", higher_is_better=False), partial(_latency, 50)),
              Measure(Metric("latency_p99", "seconds", higher_is_better=False), partial(_latency, 99)),
              Measure(Metric("mean_batch", "requests", higher_is_better=True),
                      lambda inputs, out: float(np.mean(out.batch_sizes)))),
))
