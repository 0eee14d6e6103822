"""The synchronising clock and the post-setup peak-memory measurement."""
import numpy as np

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
