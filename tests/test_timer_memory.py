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


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


needs_cuda = pytest.mark.skipif(not _cuda_available(), reason="no CUDA device on this machine: the fakes above "
                                "cover the synchronising logic")


@pytest.mark.skipif(_cuda_available(), reason="CUDA is available here: test_cuda_work_is_waited_for covers it")
def test_no_cuda_means_no_device_to_synchronise():
    # On a CPU-only machine torch reports no CUDA, so the clock reads the time alone.
    assert active_devices() == []


@needs_cuda
def test_cuda_work_is_waited_for():
    # A block of queued matmuls: the synchronising clock reads at least what CUDA's own events
    # time, where the bare clock returns as soon as the kernels are queued.
    import torch

    x = torch.randn(2048, 2048, device="cuda")
    assert active_devices() == [torch.cuda]
    for _ in range(3):
        x @ x
    clock = SyncClock()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start = clock()
    begin.record()
    for _ in range(50):
        x @ x
    end.record()
    seconds = clock() - start
    end.synchronize()
    assert seconds >= 0.95 * begin.elapsed_time(end) / 1000


@needs_cuda
def test_gpu_peak_is_reset_between_measurements_and_read_above_setup():
    import torch

    held = torch.ones(2**26, device="cuda")  # 256 MiB, allocated before measuring (setup)
    with PeakMemory() as large:
        block = torch.ones(2**27, device="cuda")  # 512 MiB
        del block
    with PeakMemory() as small:
        block = torch.ones(2**25, device="cuda")  # 128 MiB
        del block
    assert large.bytes == large.gpu_bytes == 2**29
    assert small.bytes == 2**27  # not the earlier, larger peak
    del held


def test_peak_memory_finds_a_known_allocation_within_ten_percent():
    size = 200 * 2**20
    with PeakMemory("cpu") as peak:
        block = np.ones(size, dtype=np.uint8)  # touched pages: resident
        del block
    assert abs(peak.bytes - size) / size < 0.10


def test_peak_memory_is_measured_above_the_post_setup_level():
    resident = np.ones(150 * 2**20, dtype=np.uint8)  # setup: already resident before measuring
    assert rss_bytes() > 150 * 2**20
    with PeakMemory("cpu") as peak:
        small = np.ones(20 * 2**20, dtype=np.uint8)
        del small
    assert peak.bytes < 40 * 2**20
    del resident


class FakeCuda:
    """torch.cuda's peak-memory counters, without a GPU."""

    def __init__(self):
        self.allocated = self.peak = 1000

    def synchronize(self):
        pass

    def reset_peak_memory_stats(self):
        self.peak = self.allocated

    def memory_allocated(self):
        return self.allocated

    def max_memory_allocated(self):
        return self.peak


def test_a_cpu_profile_reads_the_resident_set_even_where_cuda_is_initialised(monkeypatch):
    # On a GPU machine CUDA can be initialised in a CPU profile's process (by another test on the
    # H100 here); its call's peak is still the resident set's, not the GPU's (which reads 0).
    from proofbench.measure import memory

    cuda = FakeCuda()
    monkeypatch.setattr(memory, "_cuda", lambda: cuda)
    size = 100 * 2**20
    with PeakMemory("cpu") as cpu:
        block = np.ones(size, dtype=np.uint8)
        del block
    assert cpu.gpu_bytes is None and abs(cpu.bytes - size) / size < 0.10
    with PeakMemory("cuda") as gpu:
        cuda.peak = cuda.allocated + 4096
    assert gpu.bytes == gpu.gpu_bytes == 4096
    with PeakMemory() as unnamed:  # no device named: the GPU's wherever CUDA is in use
        pass
    assert unnamed.bytes == unnamed.gpu_bytes == 0


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
