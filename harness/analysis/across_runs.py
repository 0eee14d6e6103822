"""A ratio of two separate runs' time samples (two machines, or one machine's two devices), with
how much a run moves held by its interval.

The samples of one run show only that run's own spread. Two runs of the same code on the same
machine moved by 28-120% on a shared 2-core VM where asv runs each variant in separate processes,
and a baseline read 280 ms in one quick run and 173 ms in the next: a ratio of two runs' samples
alone read "A faster" at 1.31x [1.01, 1.40] between two runs on one machine, and "no significant
difference" at 0.97x [0.93, 1.01] the time before. So each side's run-to-run variation is added
to the ratio's interval as a known variance (`proofbench.stats.with_runs`, as the profile's is
added to a speedup's):

- measured, where the side's history of that benchmark spans at least `MIN_SITTINGS` sittings
  (runs less than `SITTING_GAP` apart are one sitting: a `history` of many commits; nights are
  sittings): the spread of successive sittings' median log values (median absolute difference,
  scaled to one sitting's standard deviation; a step between commits moves one difference and not
  the median), and never under `FLOOR`. Points of one sitting would show its noise, not how far
  the next sitting lands: a history measured in one sitting widened two sittings' ratio too
  little, and same-code sides read "faster" or "slower" in 43-82% of simulated pairs;
- else `ASSUMED_BETWEEN_RUNS`, and the comparison says it was assumed.

A word needs the widened interval: above 1 faster, below 1 slower, within `NO_DIFFERENCE` of 1
no significant difference, else inconclusive with the reason. With both sides at the floor the
interval is at least ±5.5% wide, so between two machines "no significant difference" is not
said: machines of like speed read "inconclusive: cannot tell it from no difference".
"""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import stats as _stats

from proofbench.stats import Difference, Speedup, with_runs

MIN_SITTINGS = 4  # sittings a side's variation is measured over (three differences)
SITTING_GAP = dt.timedelta(hours=1)  # runs closer than this are one sitting
FLOOR = 0.02  # no measured variation is taken as smaller: a few sittings can agree by chance
ASSUMED_BETWEEN_RUNS = 0.25  # a sitting's standard deviation where it was not measured: words need ~1.9x
NO_DIFFERENCE = 0.03  # the widest difference "no significant difference" may leave open
_MAD_TO_SD = 1 / (_stats.norm.ppf(0.75) * math.sqrt(2))  # |difference of two sittings| median -> one's sd


@dataclass(frozen=True)
class RunToRun:
    """How much one side's runs of a benchmark move from one sitting to the next: a standard
    deviation as a fraction (0.05 = 5%), measured over `sittings` sittings (0: assumed)."""

    fraction: float
    sittings: int

    @property
    def assumed(self) -> bool:
        return self.sittings == 0


ASSUMED = RunToRun(ASSUMED_BETWEEN_RUNS, 0)


def run_to_run(runs: Iterable[tuple[dt.datetime | None, float | None]]) -> RunToRun:
    """The variation of one benchmark's runs on one machine, from (start, value) pairs in any
    order (`ASSUMED` where fewer than `MIN_SITTINGS` sittings have a start and a value)."""
    points = sorted((t, math.log(v)) for t, v in runs
                    if t is not None and v is not None and math.isfinite(v) and v > 0)
    sittings: list[list[float]] = []
    last = None
    for when, value in points:
        if last is None or when - last > SITTING_GAP:
            sittings.append([])
        sittings[-1].append(value)
        last = when
    if len(sittings) < MIN_SITTINGS:
        return ASSUMED
    medians = np.array([np.median(s) for s in sittings])
    spread = math.expm1(float(np.median(np.abs(np.diff(medians)))) * _MAD_TO_SD)
    return RunToRun(max(spread, FLOOR), len(sittings))


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
    se, _ = with_runs((math.log(high) - math.log(low)) / 2 / z, math.inf, a.fraction)
    se, _ = with_runs(se, math.inf, b.fraction)
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
