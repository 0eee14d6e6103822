"""A suspected step decided by re-measurement: the commit before and the commit after, interleaved.

The commit before the step and the commit after it (`commits`: a little before the suspected
index, and the newest, so a step found a commit off still lies between them) are measured
again in one asv run, in alternating rounds (the series of one benchmark whose steps ask for the
same two commits are measured in the same run, side by side, and each decided from its own
values). Each round gives one summary value per side (e.g. its median time), and
`proofbench.stats.round_ratio` turns the paired rounds into after / before with a Student-t
interval over rounds: the round is the unit, so whatever varies between rounds widens the
interval (pooling every sample of both sides instead gave a confident wrong verdict).

The rules, with m = `min_step` and the interval at confidence 1 - `alpha`:

- confirmed: the interval excludes 1 on the suspected step's side and the estimate is at
  least m away from 1 (a rise to >= 1 + m, a fall to <= 1 - m);
- dropped: the interval lies within [1 - m, 1 + m] (no step of the minimum size), or
  excludes 1 on the other side (the level moved the other way);
- inconclusive: anything else, including fewer than `round_ratio`'s minimum of rounds.

An interval too wide to decide (inconclusive, `WIDE`: a noisy machine) earns another batch of
rounds while the budget lasts, and the decision is taken again over all the rounds, up to
`LOOKS` batches. The looks are planned, so each is taken at `alpha` / `LOOKS` (Bonferroni):
looking again does not raise the chance of confirming a step that is not there above `alpha`.
From `TRIM_FROM` rounds on, the rounds' log ratios are trimmed (`PAIRED_TRIM` at each end): a
round hit by a burst of other work on one side then moves the decision little. A quiet
machine decides a 10% step in the first batch; a noisy one takes more batches, never a wrong
word (`tools.nightly_simulation` measures the trade: `ALPHA` and `LOOKS` keep confirmed
steps that are not there under 0.1 a hundred nights with six batches of six rounds at most).

A step the history decides on its own is measured again too before it is raised (`asked`
"decided"): its two neighbours (`neighbours`: a commit `SLACK` before its index and one
after), not the newest commit, so a slow drift the detector cut into a step is not confirmed
by the distance it drifted since. Dropped, it is not raised; confirmed or inconclusive, the
history's word stands.

`settle` is the nightly check's step that applies these rules to tonight's suspected alerts
(`proofbench.analysis.check`), within a time budget, a batch each in turn (`Look`: one step's
looks); `bisect_new` then asks for the first bad
commit of each new regression.
"""
from __future__ import annotations

import enum
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Protocol

from sqlalchemy.orm import Session

from proofbench.analysis.budget import BISECT_BUDGET, CONFIRM_BUDGET, spent
from proofbench.analysis.detect import ChangePoint
from proofbench.analysis.series import Series
from proofbench.db.alerts import Alert
from proofbench.errors import ProofbenchError, brief
from proofbench.project import CheckSettings
from proofbench.stats import MIN_ROUNDS, PAIRED_TRIM, round_ratio

ALPHA = 0.01  # chance, at most, of confirming a step that is not there (all looks together)
LOOKS = 6  # decisions taken at most per step: the first batch of rounds, then all of two, ... six batches
SLACK = 1  # commits the suspected index may be off by (the detector moves boundaries by one or two)


class Outcome(enum.Enum):
    """What a re-measurement made of a suspected step."""

    CONFIRMED = "confirmed"
    DROPPED = "dropped"
    INCONCLUSIVE = "inconclusive"


class Reason(enum.Enum):
    """Why: the rule that decided (see the module docstring)."""

    STEP = "step"  # confirmed: interval beyond 1 on the step's side, estimate beyond min_step
    WITHIN_MIN_STEP = "within_min_step"  # dropped: interval inside 1 +- min_step
    OPPOSITE = "opposite"  # dropped: interval beyond 1 on the other side
    BELOW_MIN_STEP = "below_min_step"  # inconclusive: beyond 1 on the step's side, estimate under min_step
    WIDE = "wide"  # inconclusive: the interval includes 1 and reaches past min_step
    TOO_FEW_ROUNDS = "too_few_rounds"  # inconclusive: fewer paired rounds than round_ratio needs


class Suspect(Protocol):
    """What a decision needs of a suspected step (`proofbench.analysis.detect.ChangePoint` has it)."""

    direction: int
    before: float
    after: float


@dataclass(frozen=True)
class Confirmation:
    """The decision on one suspected step. `ratio`, `low`, `high`: after / before from the
    re-measured rounds and its interval at `confidence`; `p_value`: of "no change";
    `rounds`: the paired rounds used; `direction`, `expected`: the suspected step's direction
    and the history's after / before; `min_step`: the minimum relative step applied."""

    outcome: Outcome
    reason: Reason
    ratio: float
    low: float
    high: float
    p_value: float
    rounds: int
    confidence: float
    direction: int
    expected: float
    min_step: float


@dataclass(frozen=True)
class Rounds:
    """A re-measurement of two commits for one series: each round's value of the commit before
    and of the commit after (None where a commit failed that round), the seconds it took, and
    why it stopped ("rounds": all done, "budget": the time ran out)."""

    before_commit: str
    after_commit: str
    before: tuple[float | None, ...]
    after: tuple[float | None, ...]
    seconds: float
    stopped: str = "rounds"

    def then(self, more: Rounds) -> Rounds:
        """These rounds followed by `more` of the same two commits."""
        return Rounds(self.before_commit, self.after_commit, self.before + more.before, self.after + more.after,
                      self.seconds + more.seconds, more.stopped)

    def paired(self) -> tuple[list[float], list[float]]:
        """The rounds where both commits have a value."""
        pairs = [(b, a) for b, a in zip(self.before, self.after) if b is not None and a is not None]
        return [b for b, _ in pairs], [a for _, a in pairs]


class Remeasure(Protocol):
    """Measures two commits again for the series of one benchmark named by their parameter
    keys, in one run (the check command builds one on `proofbench.pipeline.remeasure.Bench.pair`):
    each key's rounds; or says in a sentence why it cannot (another machine's series, no
    repository to build)."""

    def __call__(self, machine: str, benchmark: str, keys: tuple[str, ...], before: str, after: str,
                 budget: float) -> dict[str, Rounds] | str: ...


def stored(confirmation: Confirmation | None, rounds: Rounds | None = None, reason: str = "",
           asked: str = "suspected") -> dict:
    """What an alert keeps of a confirmation attempt (the JSON of `alerts.confirmation`): the
    decision and its figures, the rounds' values, or only why none was made; `asked`: whether
    the step was "suspected" or "decided" by the history when it was measured again."""
    out: dict = {"outcome": "not_remeasured", "reason": reason} if confirmation is None else {
        **asdict(confirmation), "outcome": confirmation.outcome.value, "reason": confirmation.reason.value}
    out["asked"] = asked
    if rounds is not None:
        out.update(before_commit=rounds.before_commit, after_commit=rounds.after_commit,
                   before_rounds=list(rounds.before), after_rounds=list(rounds.after),
                   seconds=round(rounds.seconds, 3), stopped=rounds.stopped)
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def commits(index: int, newest: int, slack: int = SLACK) -> tuple[int, int]:
    """The two commits to re-measure for a step suspected at `index` (first commit at the new
    level) when `newest` is the newest commit: the one `slack` + 1 before the index, and the
    newest. The step lies between them even where its index is `slack` commits off."""
    return max(0, index - 1 - slack), newest


def neighbours(index: int, newest: int, slack: int = SLACK) -> tuple[int, int]:
    """The two commits to re-measure for a step the history decided at `index`: the one
    `slack` + 1 before it and the one `slack` after it (or the newest, if older). The step lies
    between them even where its index is `slack` commits off, and so does little drift."""
    return max(0, index - 1 - slack), min(newest, index + slack)


def decide(suspect: Suspect, before_rounds: Sequence[float], after_rounds: Sequence[float], *,
           min_step: float = 0.03, alpha: float = ALPHA) -> Confirmation:
    """Confirm or drop `suspect` from paired rounds: `before_rounds[i]` and `after_rounds[i]`
    are round i's summary of the commit before the step and of the commit after it."""
    r = round_ratio(after_rounds, before_rounds, confidence=1.0 - alpha, trim=PAIRED_TRIM)
    outcome, reason = _rule(suspect.direction, r.estimate, r.low, r.high, r.rounds, min_step)
    expected = suspect.after / suspect.before if suspect.before > 0 and suspect.after > 0 else math.nan
    return Confirmation(outcome, reason, r.estimate, r.low, r.high, r.p_value, r.rounds, 1.0 - alpha,
                        suspect.direction, expected, min_step)


def _rule(direction: int, estimate: float, low: float, high: float, rounds: int,
          min_step: float) -> tuple[Outcome, Reason]:
    if rounds < MIN_ROUNDS or not math.isfinite(estimate):
        return Outcome.INCONCLUSIVE, Reason.TOO_FEW_ROUNDS
    up, down = 1.0 + min_step, 1.0 - min_step
    beyond = low > 1.0 if direction > 0 else high < 1.0
    if beyond:
        big = estimate >= up if direction > 0 else estimate <= down
        return (Outcome.CONFIRMED, Reason.STEP) if big else (Outcome.INCONCLUSIVE, Reason.BELOW_MIN_STEP)
    if (high < 1.0) if direction > 0 else (low > 1.0):
        return Outcome.DROPPED, Reason.OPPOSITE
    if down <= low and high <= up:
        return Outcome.DROPPED, Reason.WITHIN_MIN_STEP
    return Outcome.INCONCLUSIVE, Reason.WIDE


# --- the nightly check's confirmation step ------------------------------------------

NO_CONFIRM = "confirmation is off (check --no-confirm)"
Suspected = tuple[Alert, Series, ChangePoint]  # a step to measure again: its alert, series, tonight's change point


@dataclass(frozen=True)
class Confirming:
    """How a check confirms suspected steps: `remeasure` (None: it does not) within `budget`
    seconds; and, with `bisect(session, alert, seconds)`, how it finds the first bad commit of
    each new regression among the commits no run measured (`proofbench.analysis.bisect.locate`),
    all of them within `bisect_budget` seconds."""

    remeasure: Remeasure | None = None
    budget: float = CONFIRM_BUDGET
    bisect: Callable[[Session, Alert, float], object] | None = None
    bisect_budget: float = BISECT_BUDGET


def settle(suspects: list[Suspected], confirming: Confirming,
           settings: CheckSettings) -> tuple[list[Alert], list[Alert]]:
    """Measure tonight's steps again within the budget: suspected ones (their change point
    `suspected`) and, where `confirming` can re-measure, the ones the history decided tonight
    (see the module docstring). A batch of rounds each, regressions and larger steps first,
    before any step's next batch: a step one batch decides is not kept waiting behind a noisy
    one that takes six. Returns the suspected alerts confirmed and the alerts dropped. Each
    attempt is stored with its alert."""
    if confirming.remeasure is None:  # the history's word stands; a suspect says why
        for alert, _, cp in suspects:
            alert.confirmation = stored(None, reason=NO_CONFIRM) if cp.suspected else alert.confirmation
        return [], []
    deadline = time.monotonic() + confirming.budget
    steps = [(alert, s, cp, _group(s, cp)) for alert, s, cp in suspects]
    shared = _Shared.of(confirming.remeasure, [(group, s.key.params_key) for _, s, _, group in steps])
    measured = [(alert, cp, Look(*shared[group].reader(s.key.params_key), suspect=cp,
                                 min_step=settings.for_benchmark(s.benchmark).min_step))
                for alert, s, cp, group in sorted(steps, key=lambda x: (not x[0].regression, -_size(x[2])))]
    pending = [look for _, _, look in measured]
    while pending:
        for look in pending:
            look.next(deadline)
        pending = [look for look in pending if not look.done]
    outcomes = [(alert, cp, _record(alert, cp, look, confirming.budget)) for alert, cp, look in measured]
    return ([alert for alert, cp, o in outcomes if o is Outcome.CONFIRMED and cp.suspected],
            [alert for alert, _, o in outcomes if o is Outcome.DROPPED])


def _record(alert: Alert, cp: ChangePoint, look: Look, budget: float) -> Outcome | None:
    # Store what measuring `cp` again made of it with its alert, and mark the alert: a confirmed
    # suspect opens, a dropped step drops. Returns the outcome (None: no decision).
    asked = "suspected" if cp.suspected else "decided"
    if look.got is None and not cp.suspected:  # out of time: the history's word stands
        return None
    if look.got is None or isinstance(look.got, str):  # not measured: a suspect says why
        reason = look.got or spent("confirmation", budget, "series")
        alert.confirmation = stored(None, reason=reason, asked=asked) if cp.suspected else None
        return None
    alert.confirmation = stored(look.decision, look.got, asked=asked)
    if look.decision.outcome is Outcome.CONFIRMED and cp.suspected:
        alert.status = "open"
    elif look.decision.outcome is Outcome.DROPPED:
        alert.status = "dropped"
    return look.decision.outcome


Group = tuple[str, str, str, str]  # what one re-measurement serves: machine, benchmark, commit before, commit after


def _group(s: Series, cp: ChangePoint) -> Group:
    # The two commits to measure again for one step of a stored series: a suspected one's
    # commit before and the newest, a decided one's neighbours (measured points only).
    valid = [i for i, p in enumerate(s.points) if p.value is not None]
    first, last = (commits if cp.suspected else neighbours)(cp.index, valid[-1])
    first = max((i for i in valid if i <= first), default=valid[0])
    last = min((i for i in valid if i >= last), default=valid[-1])
    return s.machine, s.benchmark, s.points[first].commit.hash, s.points[last].commit.hash


@dataclass(frozen=True)
class _Shared:
    """The batches of rounds of one re-measurement, shared by the series of one benchmark whose
    steps ask for the same two commits (several parameter sets that step at one commit): one
    asv run measures them all side by side, each series reads the batches in order, and a
    batch that no series has read yet is measured for all of them."""

    remeasure: Remeasure
    group: Group
    keys: tuple[str, ...]
    batches: list[dict[str, Rounds] | str] = field(default_factory=list)

    @classmethod
    def of(cls, remeasure: Remeasure, steps: list[tuple[Group, str]]) -> dict[Group, _Shared]:
        """One per group of `steps` (each a group and a series' parameter key), with its keys."""
        keys: dict[Group, dict[str, None]] = {}
        for group, key in steps:
            keys.setdefault(group, {})[key] = None
        return {group: cls(remeasure, group, tuple(k)) for group, k in keys.items()}

    def reader(self, key: str) -> tuple[Callable[[float], Rounds | str], Callable[[], bool]]:
        """One step's reading of the batches, from the first, for the series `key`: its batch
        (`looks`' batch: the next one, measured first for every series of the group, within
        the seconds left, where none has read it yet) and whether the next one is measured
        already (reading it costs no time)."""
        taken = [0]

        def ready() -> bool:
            return taken[0] < len(self.batches)

        def batch(left: float) -> Rounds | str:
            if not ready():
                machine, benchmark, before, after = self.group
                self.batches.append(self.remeasure(machine, benchmark, self.keys, before, after, left))
            got = self.batches[taken[0]]
            taken[0] += 1
            return got if isinstance(got, str) else got.get(key, "the re-measurement gave no rounds of this series")
        return batch, ready


class Look:
    """One step's sequential decision, a batch of rounds at a time (`next`): from the first
    batch (`batch(seconds left)`), and from all the batches so far while they leave the interval
    too wide to decide, time is left before the deadline (`time.monotonic()`) or the next batch
    is `ready` (measured already, with another series), and fewer than `LOOKS` were taken; each
    look at `alpha` / `LOOKS`. `got`: the rounds so far, or why none could be measured (None:
    none read); `decision`: the last one; `done`: no batch is to be read any more."""

    def __init__(self, batch: Callable[[float], Rounds | str], ready: Callable[[], bool] = lambda: False, *,
                 suspect: Suspect, min_step: float = 0.03, alpha: float = ALPHA) -> None:
        self.batch, self.ready, self.suspect, self.min_step, self.alpha = batch, ready, suspect, min_step, alpha
        self.got: Rounds | str | None = None
        self.decision: Confirmation | None = None
        self.done, self.taken = False, 0

    def next(self, deadline: float, anyway: bool = False) -> None:
        """Read the next batch and decide again, or find there is nothing more to read (no
        time left and the batch not measured yet, unless `anyway`)."""
        left = deadline - time.monotonic()
        if left <= 0 and not self.ready() and not anyway:  # a wide decision says the budget stopped it
            self.got = replace(self.got, stopped="budget") if isinstance(self.got, Rounds) else self.got
            self.done = True
            return
        more = self.batch(left)
        self.taken += 1
        if isinstance(more, str):  # why it cannot be measured: kept where no round was measured yet
            self.got, self.done = self.got or more, True
            return
        self.got = more if self.got is None else self.got.then(more)
        self.decision = decide(self.suspect, *self.got.paired(), min_step=self.min_step, alpha=self.alpha / LOOKS)
        self.done = self.decision.reason is not Reason.WIDE or self.got.stopped != "rounds" or self.taken >= LOOKS


def looks(batch: Callable[[float], Rounds | str], suspect: Suspect, deadline: float = math.inf, *,
          min_step: float = 0.03, alpha: float = ALPHA) -> tuple[Rounds | str, Confirmation | None]:
    """`Look`'s decision of `suspect` read to its end, the first batch read whatever the time:
    the rounds and the decision, or why the first batch could not be measured (and None)."""
    look = Look(batch, suspect=suspect, min_step=min_step, alpha=alpha)
    look.next(deadline, anyway=True)
    while not look.done:
        look.next(deadline)
    return look.got, look.decision


def answered(s: Series, alert: Alert, cp: ChangePoint) -> bool:
    """True when `alert` was dropped by measuring again the neighbours of a step the history had
    decided, and tonight's step lies between the two commits compared: that question has its answer."""
    c = alert.confirmation or {}
    if alert.status != "dropped" or c.get("asked") != "decided":
        return False
    ranks = {p.commit.hash: p.commit.rank for p in s.points}
    lo, hi = ranks.get(c.get("before_commit")), ranks.get(c.get("after_commit"))
    return lo is not None and hi is not None and lo < s.points[cp.index].commit.rank <= hi


def newer_than_remeasured(s: Series, alert: Alert) -> bool:
    """True when `s` has a commit newer than the newest one `alert`'s re-measurement compared:
    a dropped step answered whether the level moved up to that commit, not after it. A step the
    history dropped (its stored re-measurement, if any, did not drop it) answered nothing."""
    if (alert.confirmation or {}).get("outcome") != Outcome.DROPPED.value:
        return True
    newest = max((p.commit.rank for p in s.points if p.value is not None), default=-1)
    compared = (alert.confirmation or {}).get("after_commit")
    return newest > next((p.commit.rank for p in s.points if p.commit.hash == compared), -1)


def bisect_new(session: Session, alerts: list[Alert], confirming: Confirming) -> None:
    """Each new regression's first bad commit, with `confirming.bisect`, larger steps first, each
    within what is left of `confirming.bisect_budget`; a bisection that cannot run (or has no time
    left) says why in the alert."""
    started = time.monotonic()
    for alert in sorted(alerts, key=_alert_size, reverse=True) if confirming.bisect is not None else ():
        left = confirming.bisect_budget - (time.monotonic() - started)
        if left <= 0:
            alert.bisection = {"error": spent("bisection", confirming.bisect_budget, "regressions")}
            continue
        try:
            confirming.bisect(session, alert, left)
        except ProofbenchError as exc:
            alert.bisection = {"error": brief(str(exc))}


def _alert_size(alert: Alert) -> float:
    # an alert's step on a log scale, for the order bisections run in (0 where it has none)
    b, a = alert.before, alert.after
    return abs(math.log(a / b)) if b and a and b > 0 and a > 0 and math.isfinite(a / b) else 0.0


def _size(cp: ChangePoint) -> float:
    # the step's estimated relative size, for the order suspects are measured in (any value a
    # history holds, however extreme, gives a number here)
    return abs(cp.size) if math.isfinite(cp.size) else 0.0
