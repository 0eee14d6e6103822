"""Other change-point detectors, each at its package's default settings, for the evaluation.

Each takes one history (a value per commit, no gaps) and returns (index, direction) pairs:
index the first commit of the new level, direction +1 up or -1 down (the sign of the median
of the segment after against the one before, between the detector's own boundaries).

- `asv`: `asv.step_detect.detect_steps`, as `asv publish` runs it.
- `ruptures`: `ruptures.Pelt(model="rbf")` with `predict(pen=10)`. ruptures has no default
  penalty; 10 is the value of its own README's example for exactly this call (Pelt, rbf
  kernel, whose bandwidth it sets itself by the median heuristic). `min_size` stays at its
  default 2; `jump` is set to 1 (default 5 places boundaries only on multiples of 5, which a
  2-commit tolerance would count as misses: a resolution setting, not a detection one).
- `otava`: `otava.analysis.compute_change_points` (Apache Otava, formerly Hunter) with its
  defaults: window 50, max p-value 0.001, min magnitude 0 (those of `otava analyze`).
- `e-divisive`: `signal_processing_algorithms.energy_statistics.e_divisive` (MongoDB's) with
  its defaults, p-value 0.05 and 100 permutations; numpy's global generator is seeded per
  history so a run repeats. That package needs Python < 3.12, numpy < 2 and setuptools < 71
  (torch 2.13 needs >= 77), so it cannot share the project's environment: it runs in its own
  (`make install-edivisive` makes .venv-edivisive) through `tools.edivisive_worker`.
- `mann-whitney`: a sliding window written here: at every index k, the two-sided Mann-Whitney
  U test (scipy, exact for these sizes) of the `MW_WINDOW` = 10 values before k against the
  10 from k on; a change where p <= `MW_ALPHA` = 0.001 and p is the smallest within 10 indexes
  either side (ties: the earliest).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from asv.step_detect import detect_steps
from scipy.stats import mannwhitneyu

Found = list[tuple[int, int]]
MW_WINDOW, MW_ALPHA = 10, 0.001
RUPTURES_PEN = 10.0
EDIVISIVE_PYTHON = Path(__file__).resolve().parent.parent / ".venv-edivisive" / "bin" / "python"


def levels(values: Sequence[float], indexes: Sequence[int]) -> list[tuple[int, float, float]]:
    """(index, level before, level after) for boundaries given as first indexes of new segments:
    the medians of the segments between them."""
    y = np.asarray(values, dtype=float)
    bounds = sorted(i for i in set(indexes) if 0 < i < len(y))
    edges = [0, *bounds, len(y)]
    return [(int(k), float(np.median(y[edges[j]:k])), float(np.median(y[k:edges[j + 2]])))
            for j, k in enumerate(bounds)]


def directions(values: Sequence[float], indexes: Sequence[int]) -> Found:
    """(index, direction) for boundaries given as first indexes of new segments."""
    return [(k, 1 if after > before else -1) for k, before, after in levels(values, indexes) if after != before]


def asv_changes(values: Sequence[float]) -> Found:
    """asv's step detection: every boundary between two of its segments."""
    steps = detect_steps(list(values))
    return [(new[0], 1 if new[2] > old[2] else -1)
            for old, new in zip(steps, steps[1:]) if new[2] != old[2]]


def ruptures_changes(values: Sequence[float]) -> Found:
    """Pelt with the rbf kernel, penalty 10 (see the module docstring)."""
    import ruptures
    signal = np.asarray(values, dtype=float).reshape(-1, 1)
    ends = ruptures.Pelt(model="rbf", jump=1).fit(signal).predict(pen=RUPTURES_PEN)
    return directions(values, ends[:-1])


def otava_changes(values: Sequence[float]) -> Found:
    """Apache Otava's change points at its defaults."""
    from otava.analysis import compute_change_points
    found, _ = compute_change_points(list(map(float, values)))
    return directions(values, [cp.index for cp in found])


def mann_whitney_changes(values: Sequence[float], window: int = MW_WINDOW, alpha: float = MW_ALPHA) -> Found:
    """The sliding-window Mann-Whitney detector (see the module docstring)."""
    y = np.asarray(values, dtype=float)
    ks = list(range(window, len(y) - window + 1))
    p = np.array([mannwhitneyu(y[k - window:k], y[k:k + window]).pvalue for k in ks])
    picked = [k for i, k in enumerate(ks)
              if p[i] <= alpha and p[i] == p[max(0, i - window):i + window + 1].min()
              and not np.any(p[max(0, i - window):i] == p[i])]
    return directions(values, picked)


def edivisive_available() -> str | None:
    """None when the e-divisive environment is there, else why not."""
    if not EDIVISIVE_PYTHON.exists():
        return f"{EDIVISIVE_PYTHON.parent.parent.name} is missing (make install-edivisive)"
    return None


def edivisive_start(histories: list[Sequence[float]], seeds: list[int]) -> subprocess.Popen:
    """Start e-divisive on these histories in its own environment; `edivisive_result` reads it."""
    proc = subprocess.Popen([str(EDIVISIVE_PYTHON), "-m", "tools.edivisive_worker"],
                            cwd=Path(__file__).resolve().parent.parent, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    payload = json.dumps([{"values": list(map(float, h)), "seed": s} for h, s in zip(histories, seeds)])
    proc.stdin.write(payload)
    proc.stdin.close()
    return proc


def edivisive_result(proc: subprocess.Popen, histories: list[Sequence[float]]) -> list[Found]:
    """The change points of a started e-divisive run, one list per history."""
    out = proc.stdout.read()
    if proc.wait() != 0:
        sys.exit(f"e-divisive worker failed (exit {proc.returncode})")
    return [directions(h, idx) for h, idx in zip(histories, json.loads(out))]


class EDivisiveRun:
    """e-divisive on many histories, split over `workers` processes of its own environment
    (history i seeded with i): started at construction, so other work can run meanwhile, and
    read by `result`."""

    def __init__(self, histories: list[Sequence[float]], workers: int) -> None:
        self.histories = histories
        self.chunks = [list(range(w, len(histories), workers)) for w in range(workers)]
        self.procs = [edivisive_start([histories[i] for i in c], c) for c in self.chunks]

    def result(self) -> list[Found]:
        """The change points of every history, in input order."""
        found: list[Found] = [[] for _ in self.histories]
        for chunk, proc in zip(self.chunks, self.procs):
            for i, f in zip(chunk, edivisive_result(proc, [self.histories[i] for i in chunk])):
                found[i] = f
        return found


IN_PROCESS: dict[str, Callable[[Sequence[float]], Found]] = {
    "asv": asv_changes,
    "ruptures": ruptures_changes,
    "otava": otava_changes,
    "mann-whitney": mann_whitney_changes,
}


def in_process_available() -> dict[str, str | None]:
    """For each in-process anchor: None when it can run, else why not."""
    out: dict[str, str | None] = {"asv": None, "mann-whitney": None}
    for name, module in (("ruptures", "ruptures"), ("otava", "otava.analysis")):
        try:
            __import__(module)
            out[name] = None
        except ImportError as e:
            out[name] = f"not installed ({e}); pip install -e '.[evaluate]'"
    return out
