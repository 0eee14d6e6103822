"""A ratio of two separate runs' time samples (two machines, or one machine's two devices), with
how much a run moves held by its interval.

The samples of one run show only that run's own spread. Two runs of the same code on the same
machine moved by 28-120% on a shared 2-core VM where asv runs each variant in separate processes,
and a baseline read 280 ms in one quick run and 173 ms in the next: a ratio of two runs' samples
alone read "A faster" at 1.31x [1.01, 1.40] between two runs on one machine, and "no significant
difference" at 0.97x [0.93, 1.01] the time before. So each side's run-to-run variation is added
to the ratio's interval as a known variance (as `proofbench.stats.with_runs` adds the profile's
to a speedup's):

- measured, where the side's history holds at least `MIN_RUNS` runs of that benchmark: the
  spread of successive runs' log values (median absolute difference, scaled to a standard
  deviation of one run; a step between commits moves one difference and not the median);
- else `ASSUMED_BETWEEN_RUNS`, and the comparison says it was assumed.

A word needs the widened interval: above 1 faster, below 1 slower, within `no_difference` of 1
no significant difference, else inconclusive with the reason.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _stats

from proofbench.stats import Difference, Speedup

MIN_RUNS = 4  # successive runs a side's variation is measured over (three differences)
ASSUMED_BETWEEN_RUNS = 0.25  # a run's standard deviation where it was not measured: words need ~1.9x
NO_DIFFERENCE = 0.03  # the widest difference "no significant difference" may leave open
_MAD_TO_SD = 1 / (_stats.norm.ppf(0.75) * math.sqrt(2))  # |difference of two runs| median -> one run's sd


@dataclass(frozen=True)
class RunToRun:
    """How much one side's runs of a benchmark move: a standard deviation as a fraction (0.05 =
    5%), measured over `runs` runs (0: assumed)."""

    fraction: float
    runs: int

    @property
    def assumed(self) -> bool:
        return self.runs == 0


ASSUMED = RunToRun(ASSUMED_BETWEEN_RUNS, 0)


def run_to_run(values: Sequence[float]) -> RunToRun:
    """The variation of a history of one benchmark's values, oldest first (`ASSUMED` where fewer
    than `MIN_RUNS` are usable)."""
    logs = np.log([v for v in values if v is not None and math.isfinite(v) and v > 0])
    if len(logs) < MIN_RUNS:
        return ASSUMED
    return RunToRun(math.expm1(float(np.median(np.abs(np.diff(logs)))) * _MAD_TO_SD), len(logs))


@dataclass(frozen=True)
class AcrossRuns:
    """A's items/s over B's from two runs' samples (`within`: the samples' own figure), its 95%
    interval widened by both sides' run-to-run variation; `why` says what kept it from a word."""

    estimate: float
    low: float
    high: float
    within: Speedup
    a: RunToRun
    b: RunToRun
    difference: Difference
    why: str = ""


def across_runs(within: Speedup, a: RunToRun, b: RunToRun, confidence: float = 0.95,
                no_difference: float = NO_DIFFERENCE) -> AcrossRuns:
    """`within` (`proofbench.stats.speedup` of B's samples against A's) with both sides' run-to-run
    variation held by its interval, and the word it allows."""
    estimate, low, high = within.estimate, within.low, within.high
    if not within.enough_samples or not (low > 0 and high > 0 and math.isfinite(low) and math.isfinite(high)):
        return AcrossRuns(estimate, math.nan, math.nan, within, a, b, Difference.INCONCLUSIVE, "too few samples")
    z = float(_stats.norm.ppf(0.5 + confidence / 2))
    own = (math.log(high) - math.log(low)) / 2 / z
    se = math.sqrt(own * own + math.log1p(a.fraction) ** 2 + math.log1p(b.fraction) ** 2)
    centre = math.log(estimate)
    low, high = math.exp(centre - z * se), math.exp(centre + z * se)
    if low > 1:
        return AcrossRuns(estimate, low, high, within, a, b, Difference.FASTER)
    if high < 1:
        return AcrossRuns(estimate, low, high, within, a, b, Difference.SLOWER)
    if low >= 1 / (1 + no_difference) and high <= 1 + no_difference:
        return AcrossRuns(estimate, low, high, within, a, b, Difference.NONE)
    return AcrossRuns(estimate, low, high, within, a, b, Difference.INCONCLUSIVE,
                      "cannot tell it from no difference")  # it holds 1 and a difference beyond no_difference
