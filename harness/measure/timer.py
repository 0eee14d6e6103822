"""The clock every timed benchmark uses: it waits for queued device work before reading.

asv calls a benchmark's `timer` before and after each sample; without a synchronise, a
CUDA kernel launched inside the sample would be timed as if it took no time at all.
`collector_paused` keeps Python's cyclic garbage collector out of a timed stretch, as asv does
around its samples.
"""
from __future__ import annotations

import contextlib
import gc
import sys
import time
from typing import Callable, Iterable, Iterator, Protocol


class Device(Protocol):
    """Anything with a `synchronize()`: `torch.cuda`, or a fake in tests."""

    def synchronize(self) -> None: ...


def active_devices() -> list[Device]:
    """The devices with queued work to wait for: CUDA once torch has initialised it."""
    torch = sys.modules.get("torch")  # never import torch just to find there is no GPU
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return [torch.cuda]
    return []


class SyncClock:
    """A `time.perf_counter`-like clock that synchronises devices before every reading.

    Both the devices and the underlying clock are injectable so tests can check the
    synchronising path on a machine without a GPU.
    """

    def __init__(self, devices: Callable[[], Iterable[Device]] = active_devices,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._devices = devices
        self._clock = clock

    def __call__(self) -> float:
        for device in self._devices():
            device.synchronize()
        return self._clock()


sync_clock = SyncClock()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, on again after (if it was on).

    asv's time benchmarks sample with the collector off (as `timeit` does); the rounds of a
    paired measurement do the same, so a speedup and `time_call` time the same thing, and a
    collection that garbage of one side set off does not land in the other side's block. A full
    collection of a process holding a tokenizer and a model here traversed 390,000 objects and
    took 70-480 ms, one call's time three times over: the batched text tokenizer's variant read
    3.5x slower in one round of every run. The collector runs between blocks, untimed.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
