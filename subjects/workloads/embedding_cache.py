"""An LRU cache of embeddings keyed by a hash of the input, and request streams that repeat.

This is the seeds' "feature caching": hash-based keys, a bounded number of entries with
least-recently-used eviction, and built-in statistics (hits, misses, evictions, bytes held).
Keys are SHA-256 digests of the input text, so the cache holds 32 bytes per key whatever
the input's length. A hit returns the stored tensor itself: callers must not modify it.

`repeating_stream` builds the workload a cache is judged on: a request stream in which a
declared share of requests repeats an earlier one.
"""
from __future__ import annotations

import hashlib
import random
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

import torch

from proofbench.errors import DeclarationError

T = TypeVar("T")


def input_key(text: str) -> bytes:
    """The cache key of an input: the SHA-256 digest of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass(frozen=True)
class CacheStats:
    """A snapshot of a cache's counters; `hit_rate` is hits over lookups (0.0 before any)."""

    hits: int
    misses: int
    evictions: int
    entries: int
    capacity: int
    value_bytes: int

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    @property
    def hit_rate(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0


class EmbeddingCache:
    """At most `capacity` embeddings, evicting the least recently used one when full."""

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise DeclarationError(f"EmbeddingCache: capacity must be a positive int, got {capacity!r}")
        self.capacity = capacity
        self._entries: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self._hits = self._misses = self._evictions = self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, text: str) -> bool:
        """Whether `text` is cached; does not count as a lookup or refresh recency."""
        return input_key(text) in self._entries

    def get_or_compute(self, text: str, compute: Callable[[str], torch.Tensor]) -> torch.Tensor:
        """The cached embedding of `text`, or `compute(text)` stored before it is returned.

        A hit makes the entry the most recently used. If `compute` raises, nothing is
        stored and the lookup still counts as a miss.
        """
        key = input_key(text)
        value = self._entries.get(key)
        if value is not None:
            self._hits += 1
            self._entries.move_to_end(key)
            return value
        self._misses += 1
        value = compute(text)
        self._store(key, value)
        return value

    def _store(self, key: bytes, value: torch.Tensor) -> None:
        self._entries[key] = value
        self._bytes += value.nbytes
        while len(self._entries) > self.capacity:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.nbytes
            self._evictions += 1

    def stats(self) -> CacheStats:
        """The counters now; `value_bytes` is the tensor memory the entries hold."""
        return CacheStats(hits=self._hits, misses=self._misses, evictions=self._evictions,
                          entries=len(self._entries), capacity=self.capacity, value_bytes=self._bytes)


def repeating_stream(fresh: Sequence[T], n: int, repeat_rate: float, seed: int = 1006) -> list[T]:
    """`n` requests: exactly round(n * repeat_rate) of them (never the first) repeat an earlier
    request picked at random; the others are taken from `fresh` in order."""
    repeats = min(n - 1, round(n * repeat_rate)) if n else 0
    if not 0.0 <= repeat_rate <= 1.0 or len(fresh) < n - repeats:
        raise DeclarationError(f"repeating_stream: need 0 <= repeat_rate <= 1 and {n - repeats} fresh "
                               f"requests; got repeat_rate={repeat_rate!r} and {len(fresh)}")
    rng = random.Random(seed)
    positions = set(rng.sample(range(1, n), repeats)) if repeats else set()
    unused = iter(fresh)
    stream: list[T] = []
    for position in range(n):
        stream.append(rng.choice(stream) if position in positions else next(unused))
    return stream
