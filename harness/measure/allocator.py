"""glibc's allocator, set for what a benchmark process measures.

By default glibc maps a block of 128 KiB or more on its own and gives memory back to the system
once the free space at the top of its heap passes a threshold, and it moves both thresholds with
what the process happens to free. So the same calls page-fault on fresh memory in one process
and reuse the heap in the next: here the fp32 baseline of `inference.half_precision` (no_grad)
ran 145-180 ms a call from one process to the next where the variant beside it held 139-160,
and its inference-mode speedup read 1.04-1.20 (ten processes); with the thresholds fixed, the
baseline ran 138-146 ms and the speedup read 1.00-1.03. A speedup that depends on which
process measured it does not repeat.

`steady` fixes them for a timed process: blocks up to glibc's largest threshold (32 MiB on a
64-bit system) come from the heap, and the heap is not trimmed, so every call of either side
finds memory the calls before it freed. `returning` is the peak-memory measurement's own
setting (`proofbench.measure.memory`): blocks of 64 KiB and more mapped on their own, and what
is held free given back first, so a call's peak is not hidden in memory setup freed.

Another C library (musl, macOS's) has neither call; nothing is set there, and `steady` says so.
"""
from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
STEADY_MMAP_THRESHOLD = 32 * 1024 * 1024  # bytes: glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
STEADY_TRIM_THRESHOLD = 1 << 30  # bytes of free heap top kept rather than given back: in effect, all
RETURNING_MMAP_THRESHOLD = 65536  # bytes: blocks this large are mapped and unmapped on their own


def _libc():
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") else None
    except OSError:
        return None


def steady() -> bool:
    """Fix glibc's thresholds for a timed process (see the module docstring); False where this C
    library has no `mallopt` or refused a value."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, STEADY_MMAP_THRESHOLD)) and \
        bool(libc.mallopt(_M_TRIM_THRESHOLD, STEADY_TRIM_THRESHOLD))


def returning() -> None:
    """Map blocks of 64 KiB and more on their own and give back what is held free (the
    peak-memory measurement's setting, in its own process)."""
    libc = _libc()
    if libc is None:
        return
    libc.mallopt(_M_MMAP_THRESHOLD, RETURNING_MMAP_THRESHOLD)
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
