"""Noise diagnostics: how busy the rest of the machine was while a benchmark ran."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

# Other processes using more than this many cores on average makes a result suspect.
BUSY_CORES = 0.5


def _machine_busy_ticks() -> int:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return user + nice + system + irq + softirq + steal


def _own_seconds() -> float:
    # CPU seconds of this process, its reaped children and its live ones (data-loading workers,
    # a forkserver's helpers): work the benchmark itself started is not "other" load.
    me = psutil.Process()
    times = me.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in me.children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue  # gone meanwhile: its time moved to the parent's children fields, or is lost
    return total


@dataclass
class OtherLoad:
    """Context manager measuring the CPU used by other processes, in cores, over a block."""

    cores: float | None = None

    def __enter__(self) -> "OtherLoad":
        try:
            self._start = (time.monotonic(), _machine_busy_ticks(), _own_seconds())
        except (OSError, ValueError, psutil.Error):
            self._start = None
        return self

    def __exit__(self, *exc: object) -> None:
        # May be called repeatedly: each call reports the load since __enter__.
        if self._start is None:
            return
        t0, busy0, own0 = self._start
        elapsed = time.monotonic() - t0
        if elapsed <= 0:
            return
        other = (_machine_busy_ticks() - busy0) / os.sysconf("SC_CLK_TCK") - (_own_seconds() - own0)
        self.cores = max(0.0, other / elapsed)

    @property
    def busy(self) -> bool:
        return self.cores is not None and self.cores > BUSY_CORES
