"""Re-measurement decides a suspected step: paired rounds of the commit before and after."""
import math
import time

import numpy as np
import pytest

from proofbench.analysis.confirm import Confirmation, Outcome, Reason, Rounds, commits, decide, looks
from proofbench.analysis.detect import ChangePoint


def _suspect(direction=1, before=1.0, after=1.10):
    return ChangePoint(40, direction, before, after, 0.02, 2.6, direction > 0, abs(after / before - 1), True, 1)


def _rounds(ratio, cv=0.01, rounds=8, seed=0, shared=0.0):
    # Paired rounds: a between-round effect `shared` moves both sides of a round alike.
    rng = np.random.default_rng(seed)
    common = np.exp(rng.normal(0.0, shared, rounds))
    before = common * np.exp(rng.normal(0.0, cv, rounds))
    after = ratio * common * np.exp(rng.normal(0.0, cv, rounds))
    return list(before), list(after)


def test_a_real_ten_percent_rise_is_confirmed():
    before, after = _rounds(1.10)
    c = decide(_suspect(), before, after)
    assert isinstance(c, Confirmation)
    assert (c.outcome, c.reason, c.rounds) == (Outcome.CONFIRMED, Reason.STEP, 8)
    assert c.low > 1.0 and c.ratio == pytest.approx(1.10, rel=0.02) and c.p_value < 1e-4
    assert c.expected == pytest.approx(1.10) and c.confidence == 0.99 and c.direction == 1


def test_a_real_fall_is_confirmed_for_a_falling_suspect():
    before, after = _rounds(0.90)
    assert decide(_suspect(-1, 1.0, 0.9), before, after).outcome is Outcome.CONFIRMED


def test_no_change_is_dropped_as_within_the_minimum_step():
    before, after = _rounds(1.0, cv=0.005, rounds=12)
    c = decide(_suspect(), before, after)
    assert (c.outcome, c.reason) == (Outcome.DROPPED, Reason.WITHIN_MIN_STEP)
    assert 0.97 <= c.low and c.high <= 1.03


def test_a_move_the_other_way_is_dropped():
    before, after = _rounds(0.90)
    c = decide(_suspect(), before, after)
    assert (c.outcome, c.reason) == (Outcome.DROPPED, Reason.OPPOSITE)


def test_a_significant_step_under_the_minimum_is_not_confirmed():
    before, after = _rounds(1.015, cv=0.002, rounds=10)
    c = decide(_suspect(), before, after, min_step=0.03)
    assert c.low > 1.0
    assert (c.outcome, c.reason) == (Outcome.INCONCLUSIVE, Reason.BELOW_MIN_STEP)
    assert decide(_suspect(), before, after, min_step=0.01).outcome is Outcome.CONFIRMED


def test_noisy_rounds_are_inconclusive():
    before, after = _rounds(1.05, cv=0.08, rounds=4, seed=3)
    c = decide(_suspect(), before, after)
    assert (c.outcome, c.reason) == (Outcome.INCONCLUSIVE, Reason.WIDE)


def test_too_few_rounds_are_inconclusive():
    c = decide(_suspect(), [1.0, 1.0], [1.1, 1.1])
    assert (c.outcome, c.reason, c.rounds) == (Outcome.INCONCLUSIVE, Reason.TOO_FEW_ROUNDS, 2)
    assert math.isnan(c.ratio)


def test_the_round_is_the_unit_so_load_shared_by_a_round_cancels():
    # Rounds differ by 20% from one another (load), the ratio inside each round holds.
    before, after = _rounds(1.10, cv=0.005, seed=4, shared=0.2)
    assert decide(_suspect(), before, after).outcome is Outcome.CONFIRMED


def test_false_confirmations_stay_near_the_level_in_the_suspects_direction():
    # No step, a suspect upward: the interval excludes 1 upward in about alpha / 2 of cases,
    # fewer with the minimum step on top.
    confirmed = sum(decide(_suspect(), *_rounds(1.0, cv=0.02, seed=s)).outcome is Outcome.CONFIRMED
                    for s in range(400))
    assert confirmed <= 400 * 0.025 * 2


def test_rounds_too_wide_to_decide_when_the_time_is_up_say_the_budget_stopped_them():
    # a batch too noisy to decide: with time left another is measured; with none, the rounds
    # say the budget ended them (the check's words then tell to raise --confirm-budget)
    before, after = _rounds(1.05, cv=0.08, rounds=4, seed=3)
    batches = []

    def batch(left):
        batches.append(left)
        return Rounds("a", "b", tuple(before), tuple(after), 1.0)

    got, c = looks(batch, _suspect(), deadline=time.monotonic())
    assert (c.outcome, c.reason, got.stopped, len(batches)) == (Outcome.INCONCLUSIVE, Reason.WIDE, "budget", 1)
    batches.clear()
    got, c = looks(batch, _suspect())
    assert got.stopped == "rounds" and len(batches) > 1


def test_commits_bracket_a_step_found_a_commit_off():
    assert commits(40, 41) == (38, 41)
    assert commits(1, 3) == (0, 3)
