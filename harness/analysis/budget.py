"""Time budgets of measuring again: how a bisection reads what fits in the seconds it has left, and
the words for a budget that left a step unmeasured.

A measurement's length depends on whether its commit is built yet: the first of a commit builds
and installs it (seconds to minutes for a real project), the later ones only run it. So a
`Budget` paces the two apart, each by the slowest seen so far (`Pace`). The bisections of one
benchmark in a check share one `Pace`: asv keeps the last builds, so a bisection whose first
commit the one before had built would otherwise take a build for a few seconds and plan past its
budget. Another benchmark's is not shared: one benchmark's round may last a hundred times
another's.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

CONFIRM_BUDGET = 600.0  # seconds of re-measurement one check may spend confirming steps (check --confirm-budget)
BISECT_BUDGET = 1200.0  # seconds one check may spend bisecting its new regressions (check --bisect-budget)


@dataclass
class Pace:
    """The slowest measurements seen so far: a commit's first (`first`, its build included) and a
    built commit's (`again`)."""

    first: float = 0.0
    again: float = 0.0

    def saw(self, took: float, fresh: bool) -> None:
        """Take a measurement of `took` seconds, a commit's first where `fresh`."""
        if fresh:
            self.first = max(self.first, took)
        else:
            self.again = max(self.again, took)


@dataclass
class Budget:
    """`seconds` a bisection may measure for (None: no bound) on `clock`, read against `pace`
    (its benchmark's in a check, else its own); `ran_out` once something did not fit."""

    seconds: float | None
    clock: Callable[[], float]
    pace: Pace
    ran_out: bool = field(init=False, default=False)
    started: float = field(init=False)
    read: set[str] = field(init=False, default_factory=set)  # the commits measured in this bisection

    def __post_init__(self) -> None:
        self.started = self.clock()

    def timed(self, read: Callable[..., float | None]) -> Callable[..., float | None]:
        """`read(commit, ...)`, its length taken into the pace of its kind."""
        def run(commit: str, *args: str) -> float | None:
            began, fresh = self.clock(), commit not in self.read
            self.read.add(commit)
            try:
                return read(commit, *args)
            finally:
                self.pace.saw(self.clock() - began, fresh)
        return run

    def room(self, reads: int, commit: str, reserve: int) -> bool:
        """True where `reads` more measurements of `commit` (its first a build where this
        bisection has not measured it yet) and then the check's first `reserve` end within the
        budget. The check's first is counted as a build: asv keeps the last two builds, the
        reference and the commit measured last, and the check measures two other commits, or one
        it has to build anew. A built commit's pace not seen yet is read as a first measurement's."""
        if self.seconds is None:
            return True
        first, again = self.pace.first, self.pace.again or self.pace.first
        need = _reads(reads, commit not in self.read, first, again) + _reads(reserve, True, first, again)
        spent = self.clock() - self.started
        fits = spent < self.seconds and spent + need <= self.seconds
        self.ran_out |= not fits
        return fits


def _reads(n: int, fresh: bool, first: float, again: float) -> float:
    # the seconds of `n` measurements of one commit, the first of them its build where `fresh`
    return 0.0 if n < 1 else (first + (n - 1) * again if fresh else n * again)


def spent(what: str, budget: float, others: str) -> str:
    """Why a step was not measured: the `what` budget was spent on other `others`, or, where it
    is 0 s, it had no time to give at all."""
    return (f"the {what} budget ({budget:g} s) was spent on other {others}" if budget > 0 else
            f"the {what} budget is {budget:g} s: no time to measure")
