"""Bisection to the first commit at a step's new level, with fake measurements."""
from __future__ import annotations

import math
import statistics
from types import SimpleNamespace

import numpy as np
import pytest

from proofbench.analysis.bisect import Side, bisect, rounds_spread, side, tell
from proofbench.analysis.budget import Pace

COMMITS = [f"c{i:02d}" for i in range(10)]


def _measure(first_bad: int, *, failing=(), noise=0.0, seed=0, middle_for=()):
    rng = np.random.default_rng(seed)
    calls = []

    def measure(commit: str):
        calls.append(commit)
        i = COMMITS.index(commit)
        if i in failing:
            return None
        if i in middle_for:
            return 1.5 ** 0.5  # exactly between the levels 1.0 and 1.5
        level = 1.5 if i >= first_bad else 1.0
        return level * float(np.exp(rng.normal(0, noise)))

    return measure, calls


@pytest.mark.parametrize("first_bad", range(10))
def test_finds_the_first_commit_at_the_new_level_in_few_measurements(first_bad):
    measure, calls = _measure(first_bad)
    found = bisect(measure, COMMITS, 1.0, 1.5)
    assert found.culprit == COMMITS[first_bad]
    assert len(calls) <= 4  # ceil(log2(10))


def test_a_commit_that_does_not_build_is_skipped_and_said_so():
    measure, calls = _measure(6, failing={4})
    found = bisect(measure, COMMITS, 1.0, 1.5)
    assert found.culprit == "c06" and found.skipped == ("c04",)
    assert Side.FAILED in {s.side for s in found.steps}


def test_a_value_in_the_middle_is_measured_again_then_the_range_is_given():
    measure, calls = _measure(6, middle_for={4})
    found = bisect(measure, COMMITS, 1.0, 1.5, tries=2)
    assert found.culprit is None and (found.first, found.last) == ("c00", "c09")
    assert calls.count("c04") == 2


def test_noise_well_below_the_step_still_finds_the_commit():
    for seed in range(20):
        measure, _ = _measure(3, noise=0.03, seed=seed)
        assert bisect(measure, COMMITS, 1.0, 1.5).culprit == "c03"


def test_side_on_a_log_scale_and_the_unsure_middle():
    assert side(1.02, 1.0, 2.0) is Side.BEFORE and side(1.9, 1.0, 2.0) is Side.AFTER
    assert side(2 ** 0.5, 1.0, 2.0) is Side.UNSURE and side(None, 1.0, 2.0) is Side.FAILED
    assert side(0.9, 2.0, 1.0) is Side.AFTER  # a step down


def test_the_levels_are_the_re_measurements_where_one_was_made():
    # A suspected step's "after" level rests on one or two points of the history (here 15% where
    # the step is 9%): the re-measured rounds tell a commit's side better.
    from proofbench.analysis.bisect import levels

    confirmed = {"before_rounds": [1.00, 1.01, None, 0.99], "after_rounds": [1.09, 1.10, 1.08, None]}
    alert = SimpleNamespace(before=1.0, after=1.15, confirmation=confirmed)
    assert levels(alert) == (1.00, 1.09)
    assert levels(SimpleNamespace(before=1.0, after=1.15, confirmation=None)) == (1.0, 1.15)
    assert levels(SimpleNamespace(before=1.0, after=1.15, confirmation={"outcome": "not_remeasured"})) == (1.0, 1.15)


def test_one_value_on_the_wrong_side_is_outvoted_when_each_commit_is_measured_more_than_once():
    # c04 (the first measured) is at the old level, but its first run reads at the new one (a
    # burst of other work)
    def scripted():
        first = {"c04": [1.45]}
        calls = []

        def measure(commit: str):
            calls.append(commit)
            queue = first.get(commit)
            if queue:
                return queue.pop(0)
            return 1.5 if COMMITS.index(commit) >= 6 else 1.0

        return measure, calls

    once, _ = scripted()
    assert bisect(once, COMMITS, 1.0, 1.5).culprit == "c04"  # one run a commit: the wrong commit
    measure, calls = scripted()
    found = bisect(measure, COMMITS, 1.0, 1.5, runs=2)
    assert found.culprit == "c06" and calls.count("c04") == 3  # 1.45 and 1.0 too near the middle: a third
    assert all(calls.count(c) >= 2 for c in set(calls))


class DriftingMachine:
    """A suite measured on a machine whose speed wanders between rounds (another job comes and
    goes: up to 12% slower) while a round's two commits see the same speed; commits at and
    after `first_bad` are 10% slower. Records the order of each round."""

    def __init__(self, first_bad: int, seed: int) -> None:
        self.first_bad, self.rng, self.orders = first_bad, np.random.default_rng(seed), []

    def truth(self, commit: str) -> float:
        return 1.1 if COMMITS.index(commit) >= self.first_bad else 1.0

    def beside(self, target, commit, reference, label, *, reference_first=False):
        self.orders.append(reference_first)
        load = float(self.rng.uniform(1.0, 1.12))
        return self.truth(commit) * load * float(np.exp(self.rng.normal(0, 0.003))), self.truth(reference) * load

    def alone(self, commit: str) -> float:
        return self.beside(None, commit, commit, "")[0]


def test_each_commit_is_read_beside_the_new_levels_commit_so_the_machines_drift_cancels():
    from proofbench.analysis.bisect import beside

    alone = [bisect(DriftingMachine(5, seed).alone, COMMITS, 1.0, 1.1, runs=2).culprit for seed in range(20)]
    assert sum(c != "c05" for c in alone) >= 5  # values from separate runs: a wrong commit, or none
    for seed in range(20):
        machine = DriftingMachine(5, seed)
        found = bisect(beside(machine, None, COMMITS[-1], 1.1), COMMITS, 1.0, 1.1, runs=2)
        assert found.culprit == "c05", (seed, found.steps)
        assert machine.orders[:4] == [False, True, False, True]  # the order turns round by round


def test_with_the_rounds_spread_a_side_is_told_once_its_odds_reach_99_to_1():
    # a 10% step, values straying 4%: one value at a level pulls log(1.1)^2 / 2 / 0.04^2 = 2.84
    # towards it, short of log(99) = 4.6; two decide; one at each level leave it open
    assert tell([1.0], 1.0, 1.1, 0.04) is Side.UNSURE
    assert tell([1.0, 1.0], 1.0, 1.1, 0.04) is Side.BEFORE and tell([1.1, 1.1], 1.0, 1.1, 0.04) is Side.AFTER
    assert tell([1.0, 1.1], 1.0, 1.1, 0.04) is Side.UNSURE
    # a value more than a step beyond both levels is evidence of neither (in CI the slow commit
    # read 0.58 and 0.64 of the old level beside the reference, and was put before the step)
    assert tell([3.0, 1.0], 1.0, 1.1, 0.04) is Side.UNSURE and tell([0.58, 0.64], 1.0, 1.1, 0.04) is Side.UNSURE
    assert tell([0.58, 0.64, 1.0, 1.0], 1.0, 1.1, 0.04) is Side.BEFORE
    assert tell([0.9, 0.9], 1.0, 0.9, 0.04) is Side.AFTER  # a step down
    assert tell([1.0, 1.0], 1.0, 1.1, None) is Side.BEFORE  # no spread known: the median's side


# Commit 12 of the nightly test's repository (before its 10% step) read beside the reference in one
# bisection on this VM, a steady load beside it; the re-measurement before it had run while a fifth
# of the runs were 30% slow, and its paired rounds strayed 11.8%
QUIETER_NOW = [0.663, 0.906, 0.909, 0.918, 0.908, 0.914, 0.916, 0.925, 0.895, 0.925]


def _first_told(values, spread, learnt, before=1 / 1.1, after=1.0):
    # as bisect reads a commit: the first of 2..len(values) values that tells its side
    for n in range(2, len(values) + 1):
        if (told := tell(values[:n], before, after, spread, learnt)) is not Side.UNSURE:
            return n, told
    return None, Side.UNSURE


def test_where_the_machine_is_quieter_than_in_the_re_measurement_the_values_own_spread_tells_the_side():
    spread = 0.118
    assert _first_told(QUIETER_NOW, spread, None) == (None, Side.UNSURE)  # the re-measurement's spread alone
    assert _first_told(QUIETER_NOW, spread, (spread, 0.0, 0)) == (7, Side.BEFORE)  # the first value is wild
    # other commits' repeated values straying 1% tell it sooner; straying 12%, not at all
    assert _first_told(QUIETER_NOW, spread, (spread, 0.01 ** 2 * 6, 6))[0] <= 4
    assert _first_told(QUIETER_NOW, spread, (spread, 0.12 ** 2 * 6, 6)) == (None, Side.UNSURE)


def test_values_straying_as_far_as_the_step_are_told_wrongly_hardly_more_often_for_learning_the_spread():
    # a commit at the old level read with noise as large as the step, the spread known: learning
    # it from the values as well tells more commits (odds of 999 to 1), and next to no wrong ones
    rng, step = np.random.default_rng(11), math.log(1.1)
    wrong, told = {False: 0, True: 0}, {False: 0, True: 0}
    for _ in range(2000):
        values = list(np.exp(rng.normal(-step, step, 10)))
        for learn in (False, True):
            side_told = _first_told(values, step, (step, 0.0, 0) if learn else None)[1]
            wrong[learn] += side_told is Side.AFTER
            told[learn] += side_told is not Side.UNSURE
    assert told[True] > told[False] and wrong[True] - wrong[False] <= 0.005 * 2000, (told, wrong)


def test_the_spread_is_that_of_the_paired_rounds_log_ratios():
    rng = np.random.default_rng(3)
    before = np.exp(rng.normal(0, 0.02, 200))
    after = 1.1 * before * np.exp(rng.normal(0, 0.03, 200))  # the rounds' ratios stray 3%
    assert 0.027 < rounds_spread(before, after) < 0.033
    assert rounds_spread([1.0, None, 1.0], [1.1, 1.1, None]) is None  # fewer than three pairs


def test_one_wild_round_does_not_set_the_spread():
    # in a CI run one of six rounds read far off the others: the standard deviation of all six
    # was 21%, so bisection could not tell a commit whose values lay within 2% of a level
    after = [1.10, 1.12, 1.09, 1.11, 1.60, 1.10]
    assert statistics.stdev(math.log(a) for a in after) > 0.15
    assert 0.008 < rounds_spread([1.0] * 6, after) < 0.015  # that of the other five
    assert rounds_spread([1.0] * 6, [1.0, 1.02, 0.98, 1.03, 0.97, 1.01]) == pytest.approx(
        statistics.stdev(math.log(a) for a in [1.0, 1.02, 0.98, 1.03, 0.97, 1.01]))  # none wild: all six
    assert rounds_spread([1.0] * 3, [1.1, 1.1, 1.1]) == 0.0


def _noisy(first_bad: int, sigma: float, rng):
    def measure(commit: str) -> float:
        return (1.1 if COMMITS.index(commit) >= first_bad else 1.0) * float(np.exp(rng.normal(0, sigma)))
    return measure


def test_against_noise_near_half_the_step_it_names_a_wrong_commit_far_less_often_than_the_median():
    # values straying 4% about a 10% step (one busy runner, measured here: 3.4-4.1%), 200
    # bisections each way, the spread known. Here the median of two or three values named a wrong
    # commit 9 times and none 23 times; the sequential test (odds of 99 to 1 a commit, about
    # three commits a bisection, up to ten runs a commit) a wrong one once and none never
    wrong, undecided = {"median": 0, "sequential": 0}, {"median": 0, "sequential": 0}
    for seed in range(200):
        first_bad = seed % 10
        for way, options in (("median", {"tries": 2}), ("sequential", {"spread": 0.04})):
            found = bisect(_noisy(first_bad, 0.04, np.random.default_rng(seed)), COMMITS, 1.0, 1.1, runs=2, **options)
            wrong[way] += found.culprit not in (None, COMMITS[first_bad])
            undecided[way] += found.culprit is None
            if way == "sequential" and found.culprit is None:  # the range it gives holds the culprit
                assert COMMITS.index(found.first) <= first_bad <= COMMITS.index(found.last), seed
    assert wrong["median"] >= 8 and wrong["sequential"] <= 2 and undecided["sequential"] <= undecided["median"], \
        (wrong, undecided)


def test_an_alert_goes_to_the_culprit_or_the_first_commit_measured_again_at_the_new_level():
    from proofbench.analysis.bisect import Bisection, settle

    # could not tell which of c05..c07: the history's place, one noisy point, is not evidence
    assert settle(Bisection(None, "c05", "c07")) == "c07"
    assert settle(Bisection("c06", "c06", "c06")) == "c06"  # a culprit: there


def _against(first_bad: int, sigma: float, rng, *, calls=None):
    # `commit` read in one round beside `reference`, on the levels' scale (the new level 1.1)
    def read(commit: str, reference: str = COMMITS[-1]) -> float:
        if calls is not None:
            calls.append((commit, reference))
        level = {c: 1.1 if i >= first_bad else 1.0 for i, c in enumerate(COMMITS)} | {"base": 1.0}
        return level[commit] / level[reference] * 1.1 * float(np.exp(rng.normal(0, sigma)))
    return read


def test_the_culprit_is_checked_against_its_parent_read_beside_it():
    calls = []
    read = _against(6, 0.0, np.random.default_rng(0), calls=calls)
    found = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base")
    assert found.culprit == "c06" and found.check.held
    assert (found.check.before, found.check.after) == ("c05", "c06") and calls[-2:] == [("c05", "c06")] * 2
    at_start = bisect(_against(0, 0.0, np.random.default_rng(0)), COMMITS, 1.0, 1.1, runs=2, spread=0.02,
                      check=_against(0, 0.0, np.random.default_rng(0)), older="base")
    assert at_start.culprit == "c00" and at_start.check.before == "base"  # the parent: the commit before the range
    last = bisect(_against(9, 0.0, np.random.default_rng(0)), COMMITS, 1.0, 1.1, runs=2, spread=0.02,
                  check=_against(9, 0.0, np.random.default_rng(0)), older="base")
    assert last.culprit == "c09" and (last.check.before, last.check.after) == ("c08", "c09")  # fresh runs of the
    # search's last comparison (c09 is the reference): one tell on the wrong side names no culprit alone


def test_a_check_that_does_not_hold_gives_the_whole_range():
    # c04 is read at the new level (a burst of other work in both its rounds), so the search
    # ends at c04; its parent c03, read beside it, is at c04's own level: one of the tells was
    # wrong, and any may have been, so the step lies anywhere among the commits
    rng = np.random.default_rng(0)
    honest = _against(6, 0.0, rng)

    def read(commit: str, reference: str = COMMITS[-1]) -> float:
        return 1.1 if commit == "c04" and reference == COMMITS[-1] else honest(commit, reference)
    found = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base")
    assert found.culprit is None and (found.first, found.last) == ("c00", "c09")
    assert not found.check.held and (found.check.before, found.check.after) == ("c03", "c04")
    assert bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02).culprit == "c04"  # unchecked: the wrong commit


def test_checked_in_one_frame_levels_read_off_elsewhere_name_no_wrong_commit():
    # The confirmation read a 10% step as 13.8% (a load that came and went: docs/nightly.md), so
    # the old level it gives lies 3.8% below the true one, and values straying 4% about their
    # commit's level: 300 bisections each way. Unchecked, a commit at the old level is pulled
    # towards the middle and a wrong commit is named; checked, the culprit's parent is read
    # beside the culprit, and a wrong name becomes "cannot tell" over the whole range.
    wrong, undecided = {"unchecked": 0, "checked": 0}, {"unchecked": 0, "checked": 0}
    for seed in range(300):
        first_bad = seed % 10
        for way in wrong:
            read = _against(first_bad, 0.04, np.random.default_rng(seed))
            found = bisect(read, COMMITS, 1.1 / 1.138, 1.1, runs=2, spread=0.04, older="base",
                           check=read if way == "checked" else None)
            wrong[way] += found.culprit not in (None, COMMITS[first_bad])
            undecided[way] += found.culprit is None
            if found.culprit is None and way == "checked":  # the range it gives holds the culprit
                assert COMMITS.index(found.first) <= first_bad <= COMMITS.index(found.last), seed
    assert wrong["unchecked"] >= 10 and wrong["checked"] == 0, (wrong, undecided)
    assert undecided["checked"] <= 3 * (wrong["unchecked"] + undecided["unchecked"]), (wrong, undecided)


def test_a_wild_value_counts_for_neither_level_nor_for_the_spread():
    # the parent's first value beside the culprit reads three times its level (a burst of other
    # work in that round): it says nothing of the side, nor of how far values stray (taken into
    # the spread, it made it so wide that ten values could not tell the side)
    checked = iter([3.0, 1.0, 1.0])
    found = bisect(lambda commit: 1.0 if commit == "c00" else 1.1, ["c00", "c01", "c02"], 1.0, 1.1, runs=2,
                   spread=0.02, check=lambda commit, reference: next(checked), older="base")
    assert found.culprit == "c01" and found.check.held
    assert [s.value for s in found.check.steps] == [3.0, 1.0]  # told at the second value


@pytest.mark.parametrize("read, told", [(lambda commit, reference: 1.1 ** 0.5, Side.UNSURE),  # between the levels
                                        (lambda commit, reference: None, Side.FAILED)])  # a round that failed
def test_a_check_never_told_at_the_old_level_gives_the_whole_range(read, told):
    found = bisect(_against(6, 0.0, np.random.default_rng(0)), COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read,
                   older="base")
    assert found.culprit is None and (found.first, found.last) == ("c00", "c09")
    assert not found.check.held and found.check.steps[-1].side is told


def test_a_check_round_that_fails_once_is_run_again_and_twice_gives_up():
    # both commits of the check built before (the search measured them), so one failed round is
    # the machine's: run again, the check holds and names the culprit; a second failure ends it
    for failures, held in ((1, True), (2, False)):
        rounds = iter([None] * failures + [1.0] * 9)
        found = bisect(_against(6, 0.0, np.random.default_rng(0)), COMMITS, 1.0, 1.1, runs=2, spread=0.02,
                       check=lambda commit, reference: next(rounds), older="base")
        assert found.check.held is held and (found.culprit == "c06") is held
        assert [s.side for s in found.check.steps][:failures] == [Side.FAILED] * failures
        assert len(found.check.steps) == failures + (2 if held else 0)


def test_a_commit_that_failed_is_not_built_again():
    # c04 fails as the first middle; the search comes back to it between c03 and c05: the step
    # lies in c04..c05, and c04 was built once and is listed once
    measure, calls = _measure(5, failing={4})
    found = bisect(measure, COMMITS, 1.0, 1.5)
    assert found.culprit is None and (found.first, found.last) == ("c04", "c05") and found.skipped == ("c04",)
    assert calls.count("c04") == 1


def test_a_check_round_whose_culprit_failed_is_a_failed_round_not_a_lone_value():
    # the search reads a commit alone where the reference fails; the check's null is the
    # culprit's own level in that round, so without it the round failed
    from proofbench.analysis.bisect import beside

    bench = SimpleNamespace(beside=lambda target, commit, reference, label, **order: (1.0e-3, None))
    read = beside(bench, None, "c09", 1.1e-3)
    assert read("c03") == 1.0e-3 and read("c03", "c04") is None


class _Clock:
    """A clock each read advances by `seconds` (a round of two runs), wrapped around a read."""

    def __init__(self, seconds: float = 1.0) -> None:
        self.now, self.seconds = 0.0, seconds

    def __call__(self) -> float:
        return self.now

    def timed(self, read):
        def run(*args):
            self.now += self.seconds
            return read(*args)
        return run


def test_a_budget_stops_the_search_where_the_next_commit_and_the_check_would_not_fit():
    # one second a read, six in all: c04 and c06 are told before the step (two reads each), c07's
    # two and the check's two would end after the budget, so the search stops at c07..c09 and the
    # check, c06 beside c09, has the time it was kept
    clock = _Clock()
    read = clock.timed(_against(7, 0.0, np.random.default_rng(0)))
    found = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", budget=6, clock=clock)
    assert found.out_of_time and found.culprit is None and (found.first, found.last) == ("c07", "c09")
    assert [s.commit for s in found.steps] == ["c04", "c04", "c06", "c06"]
    assert found.check.held and (found.check.before, found.check.after) == ("c06", "c09")
    assert clock.now == 6
    unbounded = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", clock=clock)
    assert unbounded.culprit == "c07" and not unbounded.out_of_time


class _BuildingClock(_Clock):
    """A clock where a commit's first read also builds it: `build` seconds more."""

    def __init__(self, build: float) -> None:
        super().__init__()
        self.build, self.built = build, set()

    def timed(self, read):
        def run(commit, *args):
            self.now += self.seconds + (self.build if commit not in self.built else 0.0)
            self.built.add(commit)
            return read(commit, *args)
        return run


def test_a_budget_paces_a_commits_first_read_which_builds_it_apart_from_the_reads_of_built_ones():
    # a first read takes 3 s (its build), a later one 1 s: c04 and c06 take 4 s each, and c07's
    # two reads (4 s) and the check's two (planned as a build and a read: 4 s) still fit in 16 s,
    # so the culprit is named within the budget. At the pace of the slowest read (3 s), c07's two
    # and the check's would have needed 12 s after 8 and the search would have stopped at
    # c07..c09. Within 13 s, c07 does not fit after 8 s: the range c07..c09, checked.
    clock = _BuildingClock(build=2.0)
    read = clock.timed(_against(7, 0.0, np.random.default_rng(0)))
    found = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", budget=16, clock=clock)
    assert found.culprit == "c07" and not found.out_of_time and found.check.held
    assert [s.commit for s in found.steps] == ["c04", "c04", "c06", "c06", "c07", "c07"]
    assert clock.now == 14
    tighter = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", budget=13,
                     clock=_restarted(clock))
    assert tighter.out_of_time and (tighter.first, tighter.last) == ("c07", "c09") and tighter.check.held
    assert clock.now == 10


def test_bisections_of_one_benchmark_share_a_pace_so_none_starts_a_build_it_has_no_room_to_finish():
    # the first bisection learns that a first read takes 3 s (its build), a later one 1 s. With 6 s
    # left, the next bisection of the benchmark, on that pace, does not start c04: its build and
    # second read (4 s) and the check's two (4 s, planned as a build and a read) do not fit. On a
    # pace of its own it knows nothing yet, builds c04 (3 s) and then finds no room for its second
    # read: the same whole span, 3 s spent for nothing.
    pace = Pace()
    first = _BuildingClock(build=2.0)
    read = first.timed(_against(7, 0.0, np.random.default_rng(0)))
    bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", budget=100, clock=first, pace=pace)
    assert (pace.first, pace.again) == (3.0, 1.0)
    for shared, spent in ((pace, 0.0), (Pace(), 3.0)):
        clock = _BuildingClock(build=2.0)
        read = clock.timed(_against(7, 0.0, np.random.default_rng(0)))
        found = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", budget=6, clock=clock,
                       pace=shared)
        assert (found.first, found.last) == ("c00", "c09") and found.out_of_time and found.culprit is None
        assert clock.now == spent and len(found.steps) == spent / 3


def test_a_budget_keeps_room_for_a_build_in_the_check():
    # asv keeps the last two builds (the reference's and the commit measured last), and the check
    # reads two other commits, or one it has to build anew: here, with the step at c00, `older`,
    # which the search never read (3 s). Within 15 s the search stops at c00..c01 rather than read
    # c00 (4 s) and leave the check's 4 s past the budget
    clock = _BuildingClock(build=2.0)
    read = clock.timed(_against(0, 0.0, np.random.default_rng(0)))
    found = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", budget=15, clock=clock)
    assert (found.first, found.last) == ("c00", "c01") and found.out_of_time and found.check.held
    assert found.check.before == "base" and clock.now <= 15


def _restarted(clock: _BuildingClock) -> _BuildingClock:
    # the same clock at 0, no commit built: for a second bisection with `read` (timed by `clock`)
    clock.now, clock.built = 0.0, set()
    return clock


def test_the_check_is_made_to_its_end_past_the_budget_and_a_range_it_does_not_hold_is_not_given():
    # the search stops at c05..c06 (c04 and c06 told, c05's two and the check's two would not
    # fit); the check, c04 beside c06, reads between the levels, so it runs to its last
    # measurement past the budget (a check cut short would leave the range unconfirmed) and,
    # not held, gives the whole span
    clock = _Clock()
    honest = _against(6, 0.0, np.random.default_rng(0))
    read = clock.timed(lambda commit, reference=COMMITS[-1]: honest(commit) if reference == COMMITS[-1]
                       else 1.1 ** 0.5)
    found = bisect(read, COMMITS, 1.0, 1.1, runs=2, spread=0.02, check=read, older="base", budget=6, clock=clock)
    assert found.out_of_time and found.culprit is None and (found.first, found.last) == ("c00", "c09")
    assert (found.check.before, found.check.after) == ("c04", "c06") and not found.check.held
    assert len(found.check.steps) == 2 + 9 - 1 and clock.now == 4 + 10


def test_a_budget_spent_before_a_first_read_measures_nothing():
    clock = _Clock()
    found = bisect(clock.timed(lambda commit: 1.0), COMMITS, 1.0, 1.1, runs=2, spread=0.02, budget=0.0, clock=clock)
    assert found.out_of_time and found.steps == () and (found.first, found.last) == ("c00", "c09")
    assert found.check is None
