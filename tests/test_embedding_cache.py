"""The LRU embedding cache: hits return the stored values, the bound holds, statistics add up."""
from __future__ import annotations

import pytest
import torch

from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.embedding_cache import CacheStats, EmbeddingCache, input_key, repeating_stream


class CountingEncoder:
    """A stand-in model: a deterministic vector per text, counting how often it runs."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, text: str) -> torch.Tensor:
        self.calls.append(text)
        return torch.tensor([float(len(text)), float(sum(map(ord, text)) % 97), 1.0])


def test_a_hit_returns_the_same_values_without_recomputing():
    encoder = CountingEncoder()
    cache = EmbeddingCache(4)
    first = cache.get_or_compute("the same sentence", encoder)
    second = cache.get_or_compute("the same sentence", encoder)
    assert torch.equal(first, second)
    assert encoder.calls == ["the same sentence"]
    assert cache.stats() == CacheStats(hits=1, misses=1, evictions=0, entries=1, capacity=4, value_bytes=12)


def test_a_changed_input_misses():
    encoder = CountingEncoder()
    cache = EmbeddingCache(4)
    cache.get_or_compute("sentence one", encoder)
    cache.get_or_compute("sentence one.", encoder)  # one character more
    cache.get_or_compute("Sentence one", encoder)  # case matters
    assert encoder.calls == ["sentence one", "sentence one.", "Sentence one"]
    assert cache.stats().hits == 0
    assert input_key("a") != input_key("a ") and len(input_key("x" * 10_000)) == 32


def test_eviction_respects_the_bound_and_drops_the_least_recently_used():
    encoder = CountingEncoder()
    cache = EmbeddingCache(2)
    cache.get_or_compute("a", encoder)
    cache.get_or_compute("b", encoder)
    cache.get_or_compute("a", encoder)  # a is now the most recently used
    cache.get_or_compute("c", encoder)  # evicts b
    assert len(cache) == 2
    assert "a" in cache and "c" in cache and "b" not in cache
    cache.get_or_compute("b", encoder)  # recomputed, evicts a
    assert encoder.calls == ["a", "b", "c", "b"]
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.evictions, stats.entries) == (1, 4, 2, 2)
    assert stats.value_bytes == 2 * 12


def test_hit_rate_statistics():
    encoder = CountingEncoder()
    cache = EmbeddingCache(100)
    assert cache.stats().hit_rate == 0.0  # no lookups yet
    for text in ["x", "y", "x", "x", "z", "y"]:
        cache.get_or_compute(text, encoder)
    stats = cache.stats()
    assert stats.lookups == 6
    assert stats.hit_rate == pytest.approx(3 / 6)


def test_a_failing_computation_stores_nothing():
    cache = EmbeddingCache(2)

    def broken(text: str) -> torch.Tensor:
        raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError, match="model crashed"):
        cache.get_or_compute("a", broken)
    assert len(cache) == 0 and cache.stats().misses == 1
    assert torch.equal(cache.get_or_compute("a", CountingEncoder()), CountingEncoder()("a"))


@pytest.mark.parametrize("capacity", [0, -3, 2.5])
def test_capacity_must_be_a_positive_int(capacity):
    with pytest.raises(DeclarationError, match="capacity must be a positive int"):
        EmbeddingCache(capacity)


def test_a_repeating_stream_repeats_exactly_the_declared_share():
    fresh = [f"request {i}" for i in range(40)]
    stream = repeating_stream(fresh, 40, 0.25)
    assert len(stream) == 40 and len(set(stream)) == 30
    assert stream[0] == "request 0" and set(stream) == set(fresh[:30])  # fresh ones in order, first never a repeat
    assert repeating_stream(fresh, 40, 0.25) == stream  # deterministic
    assert repeating_stream(fresh, 12, 0.0) == fresh[:12]
    hit_rate = _hit_rate_over(stream)
    assert hit_rate == 0.25  # an unbounded cache hits exactly the repeats


def _hit_rate_over(stream):
    cache = EmbeddingCache(len(stream))
    for text in stream:
        cache.get_or_compute(text, CountingEncoder())
    return cache.stats().hit_rate


def test_a_repeating_stream_refuses_impossible_requests():
    with pytest.raises(DeclarationError, match="repeat_rate"):
        repeating_stream(["a"], 4, 1.5)
    with pytest.raises(DeclarationError, match="need 0 <= repeat_rate <= 1 and 4 fresh requests"):
        repeating_stream(["a", "b"], 4, 0.0)
