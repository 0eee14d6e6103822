"""Peak memory of one call, above the level left after setup.

CPU: the kernel's high-water mark of resident memory (VmHWM) is reset by writing 5 to
/proc/self/clear_refs, so a peak read afterwards belongs to the measured call alone.
GPU: torch's peak-allocation counter is reset and read around the call.
Which of the two a measurement reports follows the device it is told (the run profile's): a CPU
profile's call reports its resident-set peak even where something in the process has initialised
CUDA (on an H100 here `torch.backends.cudnn.version()`, which `capture()` calls, did; the GPU
peak of a CPU call then read 0 bytes). Told no device, the GPU peak is reported whenever CUDA is
initialised.
asv's own peakmem_ reports the whole process's peak, imports and setup included, which
hides the difference between variants; this does not.

glibc keeps freed memory for reuse, so a call could run inside memory setup freed and show no
peak. Entering `PeakMemory` therefore tells glibc (in this process only: the peak-memory
benchmark has one of its own) to map blocks of 64 KiB and more on their own and to give back
what it holds free (`proofbench.measure.allocator.returning`). Timed processes never get that
setting: made for all benchmark processes, it slowed the allocation-heavy AdamW for-loop
baseline 2.5x (0.62 s against 0.26 s per call), which doubled its measured speedup; they get
`allocator.steady`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from proofbench.errors import Skip
from proofbench.measure import allocator

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise Skip(f"{_STATUS} has no {field} field")


def rss_bytes() -> int:
    """This process's resident memory now."""
    return _status_kib("VmRSS") * 1024


def _reset_cpu_peak() -> None:
    try:
        _CLEAR_REFS.write_text("5")
    except OSError as exc:
        raise Skip(f"cannot reset the memory high-water mark ({_CLEAR_REFS}: {exc.strerror})") from None


def _cuda():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda
    return None


@dataclass
class PeakMemory:
    """Context manager: `with PeakMemory("cuda") as peak: work()`, then `peak.bytes`.

    `bytes` is the GPU peak above its starting allocation when CUDA is in use and `device` is
    not "cpu", else the CPU resident-set peak above the starting RSS (`gpu_bytes` is None then).
    """

    device: str | None = None  # the run profile's device; None: the GPU wherever CUDA is in use
    cpu_bytes: int = 0
    gpu_bytes: int | None = None
    _cpu_base: int = 0
    _gpu_base: int = 0

    def _cuda(self):
        return None if self.device == "cpu" else _cuda()

    def __enter__(self) -> "PeakMemory":
        cuda = self._cuda()
        if cuda is not None:
            cuda.synchronize()
            cuda.reset_peak_memory_stats()
            self._gpu_base = cuda.memory_allocated()
        allocator.returning()
        _reset_cpu_peak()
        self._cpu_base = rss_bytes()
        return self

    def __exit__(self, *exc: object) -> None:
        cuda = self._cuda()
        if cuda is not None:
            cuda.synchronize()
            self.gpu_bytes = cuda.max_memory_allocated() - self._gpu_base
        self.cpu_bytes = max(0, _status_kib("VmHWM") * 1024 - self._cpu_base)

    @property
    def bytes(self) -> int:
        return self.gpu_bytes if self.gpu_bytes is not None else self.cpu_bytes
