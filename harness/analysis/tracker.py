"""The nightly view of one benchmark: fed one point a night, it returns that night's new alerts."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, Protocol, Sequence

from proofbench.analysis.detect import ALPHA, DEFAULT, MIN_STEP, ChangePoint, Tuning, detect
from proofbench.errors import InputError


class Step(Protocol):
    """What `overlap` reads of a step: its levels (a ChangePoint, a stored alert)."""

    before: float
    after: float


class Tracker:
    """The nightly view of one benchmark: fed one point a night, it returns that night's
    new alerts, and holds the step the history cannot decide yet (`suspected`).

    Each night it runs `detect` over the last `horizon` points. A decided change point (never a
    weak one: see `proofbench.analysis.detect`) is alerted once `detect` has reported it on
    `confirm` nights in a row, and only while it is at most
    `max_age` points old (default half the horizon, so both its sides are in view: a step
    the window's edge passes is no news). An alert keeps its index and is never withdrawn; a
    later report of the same step raises nothing. The same step: same direction, and within
    `radius` commits, or within the detector's window with level ranges that overlap by at
    least half of the smaller (a boundary that wanders on a drifting history, or is found a
    few commits off, is the step already alerted).

    A suspected step is decided outside: `accept` raises it as an alert (a re-measurement
    confirmed it), `reject` keeps a step in its direction from the first commit re-measured on
    from being suspected again until a commit newer than the last one re-measured arrives (one
    dropped it; as `proofbench check` does). An alert the history decided may be measured
    again too (`proofbench.analysis.confirm.neighbours`); `reject` then withdraws it, and no
    step in its direction between the two commits re-measured is alerted again.

    A nightly job is a fresh process: pass the stored `history` (and `samples`) and the
    `alerts` raised before; tonight's `add` then alerts only what is new. Without `alerts`,
    the first `add` alerts every step already in the history.

    `detector`, where given, finds the steps instead of `detect`: called with the window's
    values, it returns their change points (indexes into the window; none suspected). Another
    detector then runs inside the same nightly rules (`tools.nightly_simulation --anchors`).
    """

    def __init__(self, *, higher_is_better: bool = False, history: Sequence[float | None] = (),
                 samples: Sequence[Sequence[float] | None] | None = None,
                 alerts: Sequence[ChangePoint] = (), confirm: int = 1, horizon: int = 120,
                 radius: int = 4, max_age: int | None = None, min_step: float = MIN_STEP,
                 alpha: float = ALPHA, tuning: Tuning = DEFAULT,
                 detector: Callable[[list[float | None]], Sequence[ChangePoint]] | None = None) -> None:
        if samples is not None and len(samples) != len(history):
            raise InputError(f"Tracker: samples has {len(samples)} entries, expected one per "
                             f"history value ({len(history)})")
        self.higher_is_better, self.min_step, self.alpha = higher_is_better, min_step, alpha
        self.confirm, self.horizon, self.radius, self.tuning = confirm, horizon, radius, tuning
        self.detector = detector
        self.max_age = horizon // 2 if max_age is None else max_age
        self._values = list(history)
        self._samples = list(samples) if samples is not None else [None] * len(self._values)
        self._alerts = list(alerts)
        self._dropped: list[tuple[int, int, int]] = []  # (direction, first, last) re-measured flat
        self._refuted: list[tuple[int, int, int]] = []  # the same, of steps the history had decided
        self._suspected: tuple[ChangePoint, ...] = ()
        # Reports of the night before, with how many nights in a row each has been seen.
        self._streaks = [(cp, 1) for cp in self._found()[0]] if self._values else []

    @property
    def alerts(self) -> tuple[ChangePoint, ...]:
        """Every alert raised so far (those given at construction first), in order."""
        return tuple(self._alerts)

    @property
    def suspected(self) -> tuple[ChangePoint, ...]:
        """Tonight's suspected steps, unless alerted or rejected: the one at the history's end
        (at most one), and those suspected before that it still shows (`detect`'s `held`)."""
        return self._suspected

    def add(self, value: float | None, samples: Sequence[float] | None = None) -> list[ChangePoint]:
        """Record tonight's value (None/NaN for a failed run) and return the new alerts."""
        self._values.append(value)
        self._samples.append(samples)
        found, suspects = self._found()
        streaks, new = [], []
        for cp in found:
            streak = 1 + max((n for old, n in self._streaks if self._same(old, cp)), default=0)
            streaks.append((cp, streak))
            fresh = cp.index >= len(self._values) - self.max_age
            refuted = any(d == cp.direction and lo < cp.index <= hi for d, lo, hi in self._refuted)
            if streak >= self.confirm and fresh and not refuted and not any(self._same(a, cp) for a in self._alerts):
                self._alerts.append(cp)
                new.append(cp)
        self._streaks = streaks
        self._suspected = tuple(cp for cp in suspects if not any(self._same(a, cp) for a in self._alerts)
                                and not any(d == cp.direction and lo <= cp.index and len(self._values) - 1 <= hi
                                            for d, lo, hi in self._dropped))
        return new

    def accept(self, cp: ChangePoint) -> ChangePoint:
        """Raise a suspected step as an alert (a re-measurement confirmed it)."""
        alert = replace(cp, suspected=False)
        self._alerts.append(alert)
        self._suspected = tuple(s for s in self._suspected if s != cp)
        return alert

    def reject(self, cp: ChangePoint, first: int, last: int) -> None:
        """A re-measurement of commits `first` and `last` dropped the step `cp`. A suspected one:
        no step in its direction at `first` or later is suspected again while `last` is the
        newest. An alert (the history decided it): withdrawn, and no step in its direction
        after `first` up to `last` is alerted again."""
        if cp in self._alerts:
            self._alerts.remove(cp)
            self._refuted.append((cp.direction, first, last))
            return
        self._dropped.append((cp.direction, first, last))
        self._suspected = tuple(s for s in self._suspected if s != cp)

    def _found(self) -> tuple[list[ChangePoint], list[ChangePoint]]:
        start = max(0, len(self._values) - self.horizon)
        if self.detector is not None:
            found = list(self.detector(self._values[start:]))
        else:
            samples = self._samples[start:]
            held = [(cp.index - start, cp.direction) for cp in self._suspected if cp.index >= start]
            found = detect(self._values[start:], samples=samples if any(s is not None for s in samples) else None,
                           higher_is_better=self.higher_is_better, min_step=self.min_step, alpha=self.alpha,
                           suspected=True, held=held, tuning=self.tuning)
        found = [replace(c, index=c.index + start) for c in found if not c.weak]
        return [c for c in found if not c.suspected], [c for c in found if c.suspected]

    def _same(self, a: ChangePoint, b: ChangePoint) -> bool:
        if a.direction != b.direction:
            return False
        apart = abs(a.index - b.index)
        return apart <= self.radius or (apart <= self.tuning.window and overlap(a, b) >= 0.5)


def overlap(a: Step, b: Step) -> float:
    """How much the level ranges of two steps overlap, as a share of the smaller one (log
    levels where all are positive)."""
    levels = (a.before, a.after, b.before, b.after)
    f = math.log if all(x > 0 for x in levels) else float
    lo_a, hi_a = sorted((f(a.before), f(a.after)))
    lo_b, hi_b = sorted((f(b.before), f(b.after)))
    smaller = min(hi_a - lo_a, hi_b - lo_b)
    if smaller <= 0:
        return 1.0 if lo_a <= lo_b <= hi_a or lo_b <= lo_a <= hi_b else 0.0
    return max(0.0, min(hi_a, hi_b) - max(lo_a, lo_b)) / smaller
