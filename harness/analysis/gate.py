"""The pull-request gate: the merge-base and the branch head measured in alternating rounds, every
series judged by the re-measurement rules of the nightly check (`movement`).

A series moved in its bad direction by at least its minimum step is a regression, in its good
direction an improvement; no move of that size is "no change"; what the rounds cannot decide is
"inconclusive" (never a regression). Intervals are over rounds, with the round as the unit as
in the nightly check's confirmation, at 1 - 0.05 / (the number of series judged whose values
varied: a count that reads the same in every round tells nothing) each (Bonferroni): every
series of a pull request is asked at once, and at 95% each, one series of twenty would read
"regression" or "improvement" of a change that moved nothing (a comment-only commit read
"improvement", x0.929 [0.884, 0.975], of three rounds on the example repository).
So the chance of any such word in one gate is at most 5%; the price is more "inconclusive" from
few rounds. (The nightly check's confirmation asks at 1 - 0.01 / 6 a look, of suspects the
history already pointed at; the project's `significance` is the history detector's rank-test
level.) The exit status follows `check`'s: 1 for a regression.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Callable

from proofbench.pipeline.remeasure import Remeasured, Target
from proofbench.project import Thresholds
from proofbench.stats import MIN_ROUNDS, RoundRatio, round_ratio

ALPHA = 0.05  # the chance, at most, of a word one gate's rounds do not bear out, shared among its series


class Verdict(enum.Enum):
    """What the gate says of one series."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no change"
    INCONCLUSIVE = "inconclusive"


class Movement(enum.Enum):
    """Which way a re-measured ratio moved, by the rules of the nightly check's confirmation
    (`confirm.decide`) without a suspected direction: up or down by at least the minimum step,
    no move of that size, or not decided."""

    UP = "up"
    DOWN = "down"
    NONE = "none"
    UNDECIDED = "undecided"


def movement(ratio: RoundRatio, min_step: float = 0.03) -> Movement:
    """The movement a pair of commits shows (after / before), with no step suspected in advance
    (what the pull-request gate asks of every series): up or down when the interval excludes 1
    and the estimate is at least `min_step` away from it; none when the whole interval lies
    within 1 +- `min_step`; undecided otherwise, or with too few rounds."""
    if ratio.rounds < MIN_ROUNDS or not math.isfinite(ratio.estimate):
        return Movement.UNDECIDED
    if ratio.low > 1.0 and ratio.estimate >= 1.0 + min_step:
        return Movement.UP
    if ratio.high < 1.0 and ratio.estimate <= 1.0 - min_step:
        return Movement.DOWN
    if 1.0 - min_step <= ratio.low and ratio.high <= 1.0 + min_step:
        return Movement.NONE
    return Movement.UNDECIDED


@dataclass(frozen=True)
class SeriesVerdict:
    """One series: head / base with its interval over rounds, and the verdict."""

    target: Target
    ratio: RoundRatio
    higher_is_better: bool
    min_step: float
    verdict: Verdict


@dataclass(frozen=True)
class GateReport:
    """Every series the gate measured, the commits, and how the measuring stopped."""

    base: str
    head: str
    series: tuple[SeriesVerdict, ...]
    rounds: int
    seconds: float
    stopped: str
    confidence: float = 1.0 - ALPHA  # each series' interval's
    shared: int = 0  # the series the gate's ALPHA is shared among: those whose values varied at all

    def count(self, verdict: Verdict) -> int:
        return sum(1 for s in self.series if s.verdict is verdict)

    @property
    def exit_code(self) -> int:
        """1 when a series regressed, as `check` exits for a new regression."""
        return 1 if self.count(Verdict.REGRESSION) else 0


def judge(measured: Remeasured, base: str, head: str, thresholds: Callable[[str], Thresholds],
          higher_is_better: Callable[[Target], bool]) -> GateReport:
    """The gate's verdict on every series `measured` holds for both commits, each interval at
    1 - `ALPHA` / the number of series whose values varied (see the module docstring; a count
    that reads the same in every round, items per call, is decided by any interval)."""
    out, targets = [], measured.targets()
    varied = [t for t in targets if len({v for v in (*measured.series(head, t), *measured.series(base, t))
                                         if v is not None}) > 1]  # a count that never moves tells nothing
    confidence = 1.0 - ALPHA / max(1, len(varied))
    for target in targets:
        limits = thresholds(target.benchmark)
        better_up = limits.higher_is_better if limits.higher_is_better is not None else higher_is_better(target)
        ratio = round_ratio(measured.series(head, target), measured.series(base, target), confidence=confidence)
        moved = movement(ratio, limits.min_step)
        out.append(SeriesVerdict(target, ratio, better_up, limits.min_step, _verdict(moved, better_up)))
    return GateReport(base, head, tuple(out), len(measured.rounds), measured.seconds, measured.stopped, confidence,
                      len(varied))


def _verdict(moved: Movement, higher_is_better: bool) -> Verdict:
    if moved is Movement.NONE:
        return Verdict.NO_CHANGE
    if moved is Movement.UNDECIDED:
        return Verdict.INCONCLUSIVE
    good = Movement.UP if higher_is_better else Movement.DOWN
    return Verdict.IMPROVEMENT if moved is good else Verdict.REGRESSION
