"""Noise diagnostics: how busy the rest of the machine was while a benchmark ran."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

# Other processes using more than this many cores on average makes a result suspect.
BUSY_CORES = 0.5


def _machine_busy_ticks() -> int:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return user + nice + system + irq + softirq + steal


def _own_ticks() -> int:
    # utime + stime of this process and its waited-for children (fields 14-17 of stat).
    stat = Path("/proc/self/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return sum(int(x) for x in fields[11:15])


@dataclass
class OtherLoad:
    """Context manager measuring the CPU used by other processes, in cores, over a block."""

    cores: float | None = None

    def __enter__(self) -> "OtherLoad":
        try:
            self._start = (time.monotonic(), _machine_busy_ticks(), _own_ticks())
        except (OSError, ValueError):
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
        hz = os.sysconf("SC_CLK_TCK")
        other = (_machine_busy_ticks() - busy0) - (_own_ticks() - own0)
        self.cores = max(0.0, other / hz / elapsed)

    @property
    def busy(self) -> bool:
        return self.cores is not None and self.cores > BUSY_CORES
