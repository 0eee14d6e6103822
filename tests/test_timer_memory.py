"""The synchronising clock and the post-setup peak-memory measurement."""
import subprocess
import sys

import numpy as np
import pytest

from proofbench.measure.memory import PeakMemory, rss_bytes
from proofbench.measure.timer import SyncClock, active_devices


class FakeDevice:
    def __init__(self, log):
        self.log = log

    def synchronize(self):
        self.log.append("sync")


def test_clock_synchronises_every_device_before_reading():
    log = []
    ticks = iter([1.0, 3.5])

    def fake_clock():
        log.append("read")
        return next(ticks)

    clock = SyncClock(devices=lambda: [FakeDevice(log), FakeDevice(log)], clock=fake_clock)
    start, end = clock(), clock()
    assert end - start == 2.5
    assert log == ["sync", "sync", "read", "sync", "sync", "read"]


def test_no_cuda_means_no_device_to_synchronise():
    # On this CPU-only machine torch reports no CUDA, so the clock reads the time alone.
    import torch

    assert not torch.cuda.is_available()
    assert active_devices() == []


def test_peak_memory_finds_a_known_allocation_within_ten_percent():
    size = 200 * 2**20
    with PeakMemory() as peak:
        block = np.ones(size, dtype=np.uint8)  # touched pages: resident
        del block
    assert abs(peak.bytes - size) / size < 0.10


def test_peak_memory_is_measured_above_the_post_setup_level():
    resident = np.ones(150 * 2**20, dtype=np.uint8)  # setup: already resident before measuring
    assert rss_bytes() > 150 * 2**20
    with PeakMemory() as peak:
        small = np.ones(20 * 2**20, dtype=np.uint8)
        del small
    assert peak.bytes < 40 * 2**20
    del resident


_FAULTS = """
import ctypes, resource, sys
from proofbench.measure import allocator
if sys.argv[1] == "steady":
    assert allocator.steady()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def calls(n):  # each call: ten blocks of 100 KiB, written, then freed, as a step's temporaries are
    for _ in range(n):
        blocks = [libc.malloc(100 * 1024) for _ in range(10)]
        for b in blocks:
            ctypes.memset(b, 1, 100 * 1024)
        for b in reversed(blocks):
            libc.free(b)
calls(2)
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
calls(20)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and minor-fault counts: Linux only")
def test_a_steady_allocator_reuses_freed_memory_where_glibc_gives_it_back_each_call():
    # glibc's default trims the megabyte a call freed at the top of its heap, so the next call
    # page-faults on fresh memory again; steady keeps it (the same calls, in fresh processes)
    def faults(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True)
        return int(out.stdout)

    assert faults("default") > 20 * 100  # about 190 pages a call (3860 here), given back and faulted again
    assert faults("steady") < 20
