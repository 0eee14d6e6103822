"""The clock every timed benchmark uses: it waits for queued device work before reading.

asv calls a benchmark's `timer` before and after each sample; without a synchronise, a
CUDA kernel launched inside the sample would be timed as if it took no time at all.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Iterable, Protocol


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
