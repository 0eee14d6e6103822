"""Serving subjects (area "inference"): the same embeddings, served faster by caching and batching.

- `embedding_cache` (+ `embedding_cache_miss`): recompute every request vs an LRU cache.
- `length_sorted_batches`: protein batches in file order vs sorted by length (seed 001), with a
  small ESM encoder (`workloads.esm_encoder`) on the synthetic proteins.
- `request_batching`: one request at a time vs dynamic batching of concurrent clients.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from proofbench import Context, Equivalence, Measure, Metric, Size, Subject, Variant, Workload, register
from proofbench.subjects.inference import TOKENS
from proofbench.subjects.workloads import minilm
from proofbench.subjects.workloads.embedding_cache import EmbeddingCache, repeating_stream
from proofbench.subjects.workloads.esm_encoder import BatchedEmbeddings, ProteinEncoder, file_order, length_order
from proofbench.subjects.workloads.proteins import generate_proteins
from proofbench.subjects.workloads.quality import MAX_ABS_DIFF, REORDER_TOLERANCE, max_abs_diff
from proofbench.subjects.workloads.request_batcher import DynamicBatcher, ServedStream, serve

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
