"""A suspected step decided by re-measurement: the commit before and the commit after, interleaved.

The commit before the step and the commit after it (`commits`: a little before the suspected
index, and the newest, so a step found a commit off still lies between them) are measured
again in one asv run, in alternating rounds. Each round gives one summary value per side (e.g. its median time), and
`proofbench.stats.round_ratio` turns the paired rounds into after / before with a Student-t
interval over rounds: the round is the unit, so whatever varies between rounds widens the
interval (pooling every sample of both sides instead gave a confident wrong verdict).

The rules, with m = `min_step` and the interval at confidence 1 - `alpha`:

- confirmed: the interval excludes 1 on the suspected step's side and the estimate is at
  least m away from 1 (a rise to >= 1 + m, a fall to <= 1 - m);
- dropped: the interval lies within [1 - m, 1 + m] (no step of the minimum size), or
  excludes 1 on the other side (the level moved the other way);
- inconclusive: anything else, including fewer than `round_ratio`'s minimum of rounds.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Protocol, Sequence

from proofbench.stats import MIN_ROUNDS, RoundRatio, round_ratio

ALPHA = 0.05
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


def commits(index: int, newest: int, slack: int = SLACK) -> tuple[int, int]:
    """The two commits to re-measure for a step suspected at `index` (first commit at the new
    level) when `newest` is the newest commit: the one `slack` + 1 before the index, and the
    newest. The step lies between them even where its index is `slack` commits off."""
    return max(0, index - 1 - slack), newest


def decide(suspect: Suspect, before_rounds: Sequence[float], after_rounds: Sequence[float], *,
           min_step: float = 0.03, alpha: float = ALPHA) -> Confirmation:
    """Confirm or drop `suspect` from paired rounds: `before_rounds[i]` and `after_rounds[i]`
    are round i's summary of the commit before the step and of the commit after it."""
    r = round_ratio(after_rounds, before_rounds, confidence=1.0 - alpha)
    outcome, reason = _rule(suspect.direction, r.estimate, r.low, r.high, r.rounds, min_step)
    expected = suspect.after / suspect.before if suspect.before > 0 and suspect.after > 0 else math.nan
    return Confirmation(outcome, reason, r.estimate, r.low, r.high, r.p_value, r.rounds, 1.0 - alpha,
                        suspect.direction, expected, min_step)


class Movement(enum.Enum):
    """Which way a re-measured ratio moved, by the same rules: up or down by at least the
    minimum step, no move of that size, or not decided."""

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
