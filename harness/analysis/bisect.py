"""Bisection: the first commit at a step's new level, among commits a nightly run did not measure.

The step is known from the history or from its re-measurement: its level before (`before`) and
after (`after`), and a commit on either side (`span`). The commits between are measured one at a
time, halving the range each time, each in one round with the commit known to be at the new level
and read as its ratio to it (`beside`). A commit's side is told from its values as they come
(`tell`): where the re-measurement's paired rounds say how far one value may stray (`spread`), by
a sequential probability ratio test between the two levels, stopping once the odds of the side
reach 99 to 1, so a commit whose values lie near a level is measured `runs` times (`locate` takes
`RUNS`, 2: one run of a process can read a few percent off, and one value on the wrong side sends
the search into the wrong half for good) and an ambiguous one more often, up to `tries` - 1 more;
where nothing says how far values stray, by the side of their median, unless too near the middle
of the step. A commit still not told stops the bisection, which says which commits the step lies
among. What the search ends with is checked in one frame (`bisect`'s `check`): the commit told
before the step nearest it, read beside the first told after it, must be told at the old level;
if not, some tell was wrong, and the bisection gives the whole span (a round of the check that
fails is run once more: both commits built before). A commit that does not build or fails is
skipped, said so, never built again, and its neighbour measured instead, as `git bisect skip`
does. With a time budget, the search measures a commit only where the measurements it needs, and
the check's first ones, fit in what is left at the pace so far (a commit's first measurement,
which builds it, paced apart from a built one's, each by the slowest); where they do not, it
stops, and the check, always made to its end, decides whether the range the search narrowed the
step to holds (else the whole span is given). (asv's own `find` bisects too, but over the mean of
every parameter set, with one measurement per commit and no way to say "cannot tell": a noisy
value there silently picks the wrong half.)
"""
from __future__ import annotations

import enum
import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench import git
from proofbench.analysis.budget import Budget, Pace
from proofbench.analysis.shift import MAD_SD
from proofbench.db.alerts import Alert, move
from proofbench.db.models import Commit
from proofbench.errors import RunError
from proofbench.pipeline.remeasure import Bench, Target, between

TRIES = 9  # up to tries - 1 measurements of a commit beyond `runs` while its side cannot be told
RUNS = 2  # measurements of each commit before its side is decided, by `locate`
UNSURE = 0.25  # without a spread, a median within this share of the step's (log) size of its middle cannot be told
WRONG = 0.01  # with a spread, a side is told once the odds against it are this low
AGAIN = 1  # failed rounds the check runs again: its commits built before, so one failure is the machine's, not theirs
WILD = 6.0  # a confirmation round this many robust standard deviations off the others' median is left out of the spread
LEARNT = 0.001  # a side told by how far the values themselves stray, once the odds against it are this low
PRIOR = 0.25  # what the re-measurement's spread weighs there, in values: it was read at another time


class Side(enum.Enum):
    """Where a measured value lies."""

    BEFORE = "before"
    AFTER = "after"
    UNSURE = "unsure"
    FAILED = "failed"


@dataclass(frozen=True)
class Step:
    """One measurement of the bisection."""

    commit: str
    value: float | None
    side: Side


@dataclass(frozen=True)
class Check:
    """What the search ended with, checked in one frame: `before`, the commit it told before the
    step nearest it, read beside `after`, the first it told after (the culprit, or a range's
    last); `held` when `before` was told at the old level there."""

    before: str
    after: str
    steps: tuple[Step, ...]
    held: bool


@dataclass(frozen=True)
class Bisection:
    """What bisecting found: `culprit`, the first commit at the new level (None when it could
    not be told), else the `first`..`last` commits the step lies among; every measurement, the
    commits skipped because they failed, and the `check` of what the search ended with, where
    one was made (all the commits are the range when it did not hold)."""

    culprit: str | None
    first: str
    last: str
    steps: tuple[Step, ...] = field(default=())
    skipped: tuple[str, ...] = field(default=())
    check: Check | None = None
    out_of_time: bool = False


def side(value: float | None, before: float, after: float) -> Side:
    """Which level `value` belongs to."""
    if value is None or not math.isfinite(value) or value <= 0 or before <= 0 or after <= 0:
        return Side.FAILED
    lo, hi, v = math.log(before), math.log(after), math.log(value)
    middle, size = (lo + hi) / 2, abs(hi - lo)
    if abs(v - middle) < UNSURE * size / 2:
        return Side.UNSURE
    return Side.AFTER if abs(v - hi) < abs(v - lo) else Side.BEFORE


def tell(values: Sequence[float], before: float, after: float, spread: float | None,
         learnt: tuple[float, float, int] | None = None) -> Side:
    """The side of a commit measured as `values` (finite, positive). With `spread` (the standard
    deviation of one value's log), a sequential probability ratio test between the two levels:
    each value pulls towards the level it is nearer by its distance from the middle, but one more
    than a step beyond either level (a burst of other work in one of the round's two runs) pulls
    nowhere, and the side is told once the odds reach (1 - WRONG) / WRONG. Without, the side of
    the values' median (`side`).

    Where that cannot tell and `learnt` is given (the re-measurement's spread; the squares and
    degrees of freedom of other commits' repeated values about their means), a second test learns
    the spread from the values (`_odds`), and tells a side at odds of 1 / LEARNT: a machine busier
    during the re-measurement than now leaves the first unsure however near one level the values
    lie (measured: rounds straying 11.8% against a 10% step, then ten values within 1-3%)."""
    if spread is None or not spread > 0:
        return side(math.exp(statistics.median(math.log(v) for v in values)), before, after)
    lo, hi = math.log(before), math.log(after)
    middle, size = (lo + hi) / 2, hi - lo
    kept = [math.log(v) for v in values if not _wild(v, before, after)]
    told = _told(sum(x - middle for x in kept) * size / spread ** 2, WRONG)
    if told is not Side.UNSURE or learnt is None:
        return told
    return _told(_odds(kept, lo, hi, *learnt), LEARNT)


def _told(odds: float, wrong: float) -> Side:  # the side whose log odds reach (1 - wrong) / wrong
    bound = math.log((1 - wrong) / wrong)
    return Side.AFTER if odds >= bound else Side.BEFORE if odds <= -bound else Side.UNSURE


def _odds(logs: Sequence[float], lo: float, hi: float, prior: float, squares: float, df: int) -> float:
    # log odds of the level `hi` against `lo` for values `logs`, their variance unknown: the normal
    # likelihood integrated over a scaled inverse chi-square prior, `prior` (a standard deviation)
    # weighing as PRIOR values and `squares` on `df` degrees of freedom as theirs
    scale, weight = PRIOR * prior ** 2 + squares, PRIOR + df + len(logs)
    return weight / 2 * (math.log(scale + sum((x - lo) ** 2 for x in logs))
                         - math.log(scale + sum((x - hi) ** 2 for x in logs)))


def _wild(value: float, before: float, after: float) -> bool:
    # more than a step beyond both levels: neither level's (a burst of other work in one of a
    # round's two runs), so it pulls towards neither, and says nothing of how far values stray
    lo, hi = math.log(before), math.log(after)
    return abs(math.log(value) - (lo + hi) / 2) > 1.5 * abs(hi - lo)


def rounds_spread(before_rounds: Sequence[float | None], after_rounds: Sequence[float | None]) -> float | None:
    """How far one value read beside the reference may stray (the standard deviation of a log):
    that of the log ratios of a re-measurement's paired rounds (`before_rounds[i]` beside
    `after_rounds[i]`), leaving out a ratio more than `WILD` robust standard deviations (the
    median absolute deviation's) from their median: one round hit by a burst of other work would
    otherwise set the spread for every value; None with fewer than three pairs. Six rounds may
    read it low: `bisect` takes the spread its own repeated values show where that is larger."""
    logs = [math.log(a / b) for b, a in zip(before_rounds, after_rounds)
            if b is not None and a is not None and b > 0 and a > 0 and math.isfinite(a / b)]
    if len(logs) < 3:
        return None
    centre = statistics.median(logs)
    scale = MAD_SD * statistics.median(abs(x - centre) for x in logs)
    kept = [x for x in logs if abs(x - centre) <= WILD * scale] if scale > 0 else logs
    return statistics.stdev(kept) if len(kept) >= 3 else statistics.stdev(logs)


def bisect(measure: Callable[[str], float | None], commits: Sequence[str], before: float, after: float, *,
           spread: float | None = None, tries: int = TRIES, runs: int = 1,
           check: Callable[[str, str], float | None] | None = None, older: str | None = None,
           budget: float | None = None, clock: Callable[[], float] = time.monotonic, pace: Pace | None = None
           ) -> Bisection:
    """Find the first commit of `commits` at the `after` level. `commits` are in history order;
    the last one is known to be at the new level (the step lies after the commit before the
    first, `older`, which is known to be at the old level). `measure(commit)` runs it once; each
    commit is measured `runs` times, and up to `tries` - 1 times more while its side cannot be
    told (`tell`, with `spread`, or the spread the bisection's own repeated values show where
    larger). With `check(commit, reference)` (`commit` read in one round beside `reference`, on
    the levels' scale), what the search ended with is checked: the commit told before the step
    nearest it (the culprit's parent) read beside the first told after it (the culprit, or the
    last of a range) must be told at the old level, else one of the tells was wrong and the
    bisection cannot tell where among `commits` the step lies (`Bisection.check`). Where that
    commit is the last, the reference every commit was read beside, the check repeats the
    search's last comparison on fresh runs: one tell on the wrong side names no culprit alone.
    With `budget` (seconds, on `clock`), the search measures a commit only while the `runs`
    measurements it needs (one, past those) and `runs` of the check's fit in what is left, at the
    pace so far (`proofbench.analysis.budget`: a commit's first measurement, its build, paced
    apart; `pace`, where given, shared with its benchmark's other bisections; `Bisection.out_of_time`
    where they did not); the check is always made to its end, past the budget if need be."""
    if not commits:
        raise ValueError("bisect needs at least one commit")
    timer = Budget(budget, clock, pace or Pace())
    measure = timer.timed(measure)  # not the check: whether its commits are still built, it cannot tell
    reserve = runs if check is not None else 0  # the check's first measurements, kept room for
    good, bad = -1, len(commits) - 1  # indexes: last known before, first known after
    steps: list[Step] = []
    skipped: list[str] = []
    while bad - good > 1:
        mid = (good + bad) // 2
        found = _measure_near(measure, commits, (mid, good, bad), (before, after, spread), (runs, tries), steps,
                              skipped, partial(timer.room, reserve=reserve))
        if found is None:  # nothing between could be told: stop with the range
            break
        index, where = found
        good, bad = (index, bad) if where is Side.BEFORE else (good, index)
    lower = commits[good] if good >= 0 else older
    checked = None
    if check is not None and lower is not None and (good >= 0 or bad < len(commits) - 1):  # something narrowed
        record: list[Step] = []
        told = _until_told(partial(check, lower, commits[bad]), lower, (before, after, spread), (runs, tries), record,
                           lambda reads, commit: True, steps, again=AGAIN)
        checked = Check(lower, commits[bad], tuple(record), told is Side.BEFORE)
    held = checked is None or checked.held  # not held: any of the tells may have been on the wrong side
    first, last = (commits[good + 1], commits[bad]) if held else (commits[0], commits[-1])
    return Bisection(commits[bad] if held and bad - good == 1 else None, first, last, tuple(steps), tuple(skipped),
                     checked, timer.ran_out)


def _measure_near(measure, commits, where, step, counts, steps, skipped, room):
    # The mid commit, or the nearest one that builds; its side once it can be told.
    mid, good, bad = where
    for index in _outwards(mid, good, bad):
        if commits[index] in skipped:  # it failed before: not built again
            continue
        told = _until_told(partial(measure, commits[index]), commits[index], step, counts, steps, room)
        if told is Side.FAILED:
            skipped.append(commits[index])
            continue
        return None if told in (Side.UNSURE, None) else (index, told)  # UNSURE: measured as often as allowed
    return None


def _until_told(read, commit, step, counts, record, room, others=(), again=0):
    # `commit` read with `read` until its side can be told (at least `runs` values, at most
    # runs + tries - 1), each read recorded; FAILED at its first failure past `again` (each read
    # again), UNSURE when never told, None where `room(n, commit)` says the n measurements it
    # needs do not fit in the time left. The spread is the largest of the given one and what
    # repeated values in `record` and in `others` show (and those values are learnt from: `tell`).
    (before, after, spread), (runs, tries) = step, counts
    elsewhere = _within(others, before, after)  # `others` do not change while `commit` is read
    values: list[float] = []
    failed = 0
    while len(values) < runs + tries - 1:
        if not room(max(runs - len(values), 1), commit):
            return None
        value = read()
        if side(value, before, after) is Side.FAILED:
            record.append(Step(commit, value, Side.FAILED))
            failed += 1
            if failed > again:
                return Side.FAILED
            continue
        values.append(value)
        seen = [s for s in (spread, _within([*record, Step(commit, value, Side.UNSURE)], before, after), elsewhere)
                if s is not None]
        told = tell(values, before, after, None if spread is None else max(seen),
                    (spread, *_squares([*record, *others], before, after, commit)) if spread else None)
        record.append(Step(commit, value, told))
        if len(values) >= runs and told is not Side.UNSURE:
            return told
    return Side.UNSURE


def _within(steps: Sequence[Step], before: float, after: float) -> float | None:
    squares, df = _squares(steps, before, after)  # repeated values' spread about their commit's mean (logs)
    return math.sqrt(squares / df) if df >= 1 else None


def _squares(steps: Sequence[Step], before: float, after: float, leave: str | None = None) -> tuple[float, int]:
    # the squares of repeated values' logs about their commit's mean, and their degrees of
    # freedom, pooled over the commits but `leave`, wild values left out
    logs: dict[str, list[float]] = {}
    for s in steps:
        if s.side is not Side.FAILED and s.commit != leave and not _wild(s.value, before, after):
            logs.setdefault(s.commit, []).append(math.log(s.value))
    squares = sum(sum((x - statistics.fmean(v)) ** 2 for x in v) for v in logs.values())
    return squares, sum(map(len, logs.values())) - len(logs)


def _outwards(mid: int, good: int, bad: int) -> list[int]:
    # mid, then its neighbours alternately, staying strictly between good and bad
    out, step = [mid], 1
    while len(out) < bad - good - 1:
        for candidate in (mid + step, mid - step):
            if good < candidate < bad and candidate not in out:
                out.append(candidate)
        step += 1
    return out


def locate(session: Session, alert: Alert, bench: Bench, *, tries: int = TRIES, runs: int = RUNS,
           budget: float | None = None, pace: Pace | None = None) -> Bisection:
    """Bisect the commits of `alert`'s step (`span`), measuring each on this machine with
    `bench`, within `budget` seconds if given (read against `pace`, shared by a check's
    bisections of one benchmark); stores what was found with the alert (`culprit`, and
    `bisection`: every measurement, the commits skipped, the seconds it took, and `stopped:
    "budget"` where the budget ended it). An alert of another machine's series is not bisected
    here (RunError): its step may not be on this machine at all, as a step that one CPU's
    instructions make is not on another's."""
    if alert.machine.name != bench.machine.name:
        raise RunError(f"measured on machine {alert.machine.name!r}; only this machine's "
                       f"({bench.machine.name!r}) alerts are bisected here")
    target = Target.of(alert.benchmark.name, alert.params_key)
    started = time.monotonic()
    older, newer = span(alert)
    (before, after), spread = levels(alert), _spread(alert)
    if older is None:  # nothing measured before it: the alert's commit is the first bad one
        commits, found = [newer], Bisection(newer, newer, newer)
    else:
        commits = between(bench.repo, bench.branch, older, newer)
        read = beside(bench, target, newer, after)
        left = None if budget is None else budget - (time.monotonic() - started)
        found = bisect(read, commits, before, after, spread=spread, tries=tries, runs=runs, check=read, older=older,
                       budget=left, pace=pace)
    alert.bisection = {"between": len(commits), "first": found.first, "last": found.last, "levels": [before, after],
                       "spread": spread, "reference": newer, "steps": _steps_json(found.steps),
                       "skipped": list(found.skipped), "seconds": round(time.monotonic() - started, 3)}
    if budget is not None:
        alert.bisection.update(budget=budget, **({"stopped": "budget"} if found.out_of_time else {}))
    if found.check is not None:
        alert.bisection["check"] = {"before": found.check.before, "after": found.check.after,
                                    "held": found.check.held, "steps": _steps_json(found.check.steps)}
    alert.culprit = _commit(session, bench, found.culprit) if found.culprit else None
    if older is not None:
        moved = move(session, alert, [older, *commits], settle(found), found.first)
        if moved:
            alert.bisection = {**alert.bisection, "moved_from": moved}
    return found


def _steps_json(steps: Sequence[Step]) -> list[dict]:
    return [{"commit": s.commit, "value": s.value if s.value is None or math.isfinite(s.value) else None,
             "side": s.side.value} for s in steps]


def settle(found: Bisection) -> str:
    """Where an alert goes after bisecting: at the culprit; where it could not tell which of
    `found.first`..`last` made the step, at `last`, the first commit measured again at the new
    level. The history's own place rests on one or two noisy points, which the bisection could
    not confirm: in a busy CI run the history put a step one commit early, inside the range, and
    the alert named the commit before the one that made it (in the nightly simulation, 91.7% of
    10% regressions flagged by the second night where the alert stayed, 89.7%)."""
    return found.culprit if found.culprit is not None else found.last


def beside(bench: Bench, target: Target, reference: str, level: float) -> Callable[..., float | None]:
    """A commit's value as bisection reads it: measured in one round with `reference` (a commit
    at the new level; or `against`, the second argument: the commit a bisection's end is checked
    beside), the order turning each time, and put on the levels' scale as its ratio to the
    reference times the new `level`. Separate runs of one commit read a few percent apart on a
    busy machine, half a 10% step; one round's two commits see the same machine. Where the
    reference fails in a round, the commit's own value is taken as measured; where `against`
    fails, the round failed (the check's null is `against`'s own level, in that round)."""
    numbers = itertools.count()  # each measurement in a results directory of its own

    def measure(commit: str, against: str = reference) -> float | None:
        n = next(numbers)
        value, ref = bench.beside(target, commit, against, f"{n}-{commit[:12]}", reference_first=n % 2 == 1)
        if value is None or ref is None or not ref > 0:  # a check's value means nothing alone
            return value if against == reference else None
        return value / ref * level
    return measure


def span(alert: Alert) -> tuple[str | None, str]:
    """The commit known to be at the old level (None: none is) and the one known to be at the new
    level, between which the step's first commit lies. A confirmed step's are the two commits its
    re-measurement compared, measured now and told apart: the history's own neighbours of a step
    that one or two points suggested may both be on one side (one noisy point moves a suspect's
    place). Else the alert's previous measured commit and its commit."""
    c = alert.confirmation or {}
    if c.get("outcome") == "confirmed" and c.get("before_commit") and c.get("after_commit"):
        return c["before_commit"], c["after_commit"]
    return (alert.previous_commit.hash if alert.previous_commit else None), alert.commit.hash


def levels(alert: Alert) -> tuple[float, float]:
    """The levels before and after the step that bisection tells commits apart by: the medians of
    the re-measurement's rounds where one was made (measured now, as the bisection's own values
    are; a suspected step's levels in the history rest on one or two points), else the alert's."""
    c = alert.confirmation or {}
    return rounds_levels(c.get("before_rounds") or (), c.get("after_rounds") or ()) or (alert.before, alert.after)


def rounds_levels(before_rounds: Sequence[float | None], after_rounds: Sequence[float | None]
                  ) -> tuple[float, float] | None:
    """The levels a re-measurement's rounds read: the median of each commit's values (None
    where either commit has none)."""
    before = [v for v in before_rounds if v is not None]
    after = [v for v in after_rounds if v is not None]
    return (float(statistics.median(before)), float(statistics.median(after))) if before and after else None


def _spread(alert: Alert) -> float | None:
    # how far a value read beside the reference may stray, from the re-measurement's paired rounds
    c = alert.confirmation or {}
    return rounds_spread(c.get("before_rounds") or (), c.get("after_rounds") or ())


def _commit(session: Session, bench: Bench, commit: str) -> Commit:
    # the culprit's row, made (with its subject line, author and dates) where no result names it yet
    row = session.scalars(select(Commit).where(Commit.hash == commit)).first()
    if row is None:
        info = git.commit_info(bench.repo, commit)
        row = Commit(hash=commit, subject=info.subject if info else "", author=(info.author if info else "")[:200],
                     authored_at=info.authored_at if info else None, committed_at=info.committed_at if info else None)
        session.add(row)
        session.flush()
    return row
