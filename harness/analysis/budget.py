"""Time budgets of measuring again: how a bisection reads what fits in the seconds it has left, and
the words for a budget that left a step unmeasured.

A measurement's length depends on whether its commit is built yet: the first of a commit builds
and installs it (seconds to minutes for a real project), the later ones only run it. So a
`Budget` paces the two apart, each by the slowest seen so far (`Pace`), and a check's bisections
share one `Pace`: a bisection whose first commit asv still had built from the one before would
otherwise take a build for a few seconds and plan past its budget.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

CONFIRM_BUDGET = 600.0  # seconds of re-measurement one check may spend confirming steps (check --confirm-budget)
BISECT_BUDGET = 1200.0  # seconds one check may spend bisecting its new regressions (check --bisect-budget)


@dataclass
class Pace:
    """The slowest measurements seen so far: a commit's first (`first`, its build included) and a
    built commit's (`again`); the bisections of one check share one."""

    first: float = 0.0
    again: float = 0.0


@dataclass
class Budget:
    """`seconds` a bisection's search may measure for (None: no bound) on `clock`, read against
    `pace`; `ran_out` once something did not fit."""

    seconds: float | None
    clock: Callable[[], float]
    pace: Pace = field(default_factory=Pace)
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
                took = self.clock() - began
                if fresh:
                    self.pace.first = max(self.pace.first, took)
                else:
                    self.pace.again = max(self.pace.again, took)
        return run

    def room(self, reads: int, fresh: bool, reserve: int) -> bool:
        """True where `reads` more measurements of one commit (`fresh`: none of it yet) and then
        `reserve` of built commits end within the budget; a pace not yet seen is read as the other."""
        if self.seconds is None:
            return True
        spent = self.clock() - self.started
        first, again = self.pace.first or self.pace.again, self.pace.again or self.pace.first
        need = (first + (reads - 1) * again if fresh else reads * again) + reserve * again
        fits = spent < self.seconds and spent + need <= self.seconds
        self.ran_out |= not fits
        return fits


def spent(what: str, budget: float, others: str) -> str:
    """Why a step was not measured: the `what` budget was spent on other `others`, or, where it
    is 0 s, it had no time to give at all."""
    return (f"the {what} budget ({budget:g} s) was spent on other {others}" if budget > 0 else
            f"the {what} budget is {budget:g} s: no time to measure")
