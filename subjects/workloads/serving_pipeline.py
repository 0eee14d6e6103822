"""Seed 003's inference path end to end: concurrent clients' embedding requests served by one worker.

Clients (threads) send their requests one after another; one worker answers them through a
`DynamicBatcher` (`workloads.request_batcher`), embedding with all-MiniLM-L6-v2 under
inference_mode (`minilm.Encoder`). Half the requests repeat an earlier one
(`embedding_cache.repeating_stream`), as in the cache's own subject. The parts, each the code
of the subject that measures it alone:

- int8: dynamic int8 Linear layers (`quantized.dynamic_int8`, `quantization.dynamic_int8`);
- embedding_cache: the worker looks each request up in an LRU cache first and embeds only the
  misses (`embedding_cache.EmbeddingCache`, `inference.embedding_cache`); the cache lives in
  the one worker thread, so no lock is needed, and starts empty at every call;
- request_batching: the worker answers the requests waiting (up to max_batch, max_wait) in
  one batch (`inference.request_batching`).

With every part off it is the plain server: fp32, one request at a time, every request
embedded. The int8 kernels are CPU kernels, so this pipeline runs on the CPU in every profile.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import torch

from proofbench.errors import DeclarationError
from proofbench.subjects.workloads import minilm
from proofbench.subjects.workloads.embedding_cache import EmbeddingCache, repeating_stream
from proofbench.subjects.workloads.parts import BF16_WEIGHTS, EMBEDDING_CACHE, INT8, REQUEST_BATCHING
from proofbench.subjects.workloads.quantized import dynamic_int8, serialized_bytes
from proofbench.subjects.workloads.request_batcher import DynamicBatcher, serve

DEVICE = "cpu"
PARTS = (INT8, EMBEDDING_CACHE, REQUEST_BATCHING,
         replace(BF16_WEIGHTS, left_out="in conflict with int8: dynamic int8 Linear layers take fp32 activations, "
                 "and the seed's advice for CPU inference is quantization"))


@dataclass(frozen=True)
class ServingWork:
    """The clients' requests, the fp32 encoder, its int8 copy (when the variant needs it), the
    batching limits, the cache bound, and each model's saved size."""

    fp32: minilm.Encoder
    int8: minilm.Encoder | None
    clients: tuple[tuple[str, ...], ...]
    max_batch: int
    max_wait: float
    capacity: int
    model_bytes: dict[str, int]


@dataclass(frozen=True)
class Served:
    """One call's responses in client-major order, what the cache and batcher did, and the model's size."""

    responses: torch.Tensor
    hits: int
    batch_sizes: tuple[int, ...]
    model_bytes: int
    observed: dict[str, object]


def serving_work(size: Any, parts: frozenset[str]) -> ServingWork:
    """The workload of one size: `clients` x `per_client` requests, `repeat_rate` of them repeats."""
    clients, per_client = size["clients"], size["per_client"]
    n = clients * per_client
    stream = repeating_stream(minilm.distinct_sentences(n), n, size["repeat_rate"])
    fp32 = minilm.Encoder.load(DEVICE)
    int8 = replace(fp32, model=dynamic_int8(fp32.model)) if "int8" in parts else None
    grouped = tuple(tuple(stream[c * per_client:(c + 1) * per_client]) for c in range(clients))
    sizes = {"fp32": serialized_bytes(fp32.model), **({"int8": serialized_bytes(int8.model)} if int8 else {})}
    return ServingWork(fp32, int8, grouped, size["max_batch"], size["max_wait"], size["capacity"], sizes)


def _handler(encoder: minilm.Encoder, cache: EmbeddingCache | None) -> Callable[[list[str]], list[torch.Tensor]]:
    # The worker's call: embed the batch, or with a cache only the texts it does not hold.
    def handle(texts: list[str]) -> list[torch.Tensor]:
        if cache is None:
            return list(encoder.embed_texts(texts))
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        fresh = dict(zip(missing, encoder.embed_texts(missing))) if missing else {}
        return [cache.get_or_compute(text, fresh.__getitem__) for text in texts]

    return handle


def run_serving(parts: frozenset[str], work: ServingWork) -> Served:
    """Serve every client's requests once with `parts` on (see the module docstring)."""
    encoder = work.fp32
    if "int8" in parts:
        if work.int8 is None:
            raise DeclarationError("a variant with int8 on got a workload prepared without the int8 model")
        encoder = work.int8
    cache = EmbeddingCache(work.capacity) if "embedding_cache" in parts else None
    batching = "request_batching" in parts
    batcher = DynamicBatcher(_handler(encoder, cache), work.max_batch if batching else 1,
                             work.max_wait if batching else 0.0)
    served = serve(batcher, work.clients)
    hits = cache.stats().hits if cache is not None else 0
    observed = {"int8": any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in encoder.model.modules()),
                "cache": cache is not None, "max_batch": batcher.max_batch}
    return Served(torch.stack(served.responses), hits, served.batch_sizes,
                  work.model_bytes["int8" if "int8" in parts else "fp32"], observed)
