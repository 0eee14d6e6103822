"""Variation between processes: a pair's rounds from two processes, the between-process variance
pooled over a run's comparisons, the interval's coverage of a repeat run, and the comparison whose
processes disagree beyond the pool."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as scipy_stats

from proofbench.analysis.comparison import pooled_between
from proofbench.reports.formatting import speedup_words
from proofbench.rounds import Block, Round
from proofbench.stats import Difference, Why, paired, process_groups, round_ratio
from proofbench.variation import Between, Group, combined, groups, pooled

PROCESS_SD = 0.02  # one process's own effect on the log ratio (2%), as measured between processes here
ROUND_SD = 0.03  # a round's own noise
ROUNDS = 4  # per process


def _comparison(rng, truth: float, process_sd: float = PROCESS_SD, processes: int = 2, rounds: int = ROUNDS):
    """Round log ratios of one comparison measured in `processes` processes."""
    effects = np.repeat(rng.normal(0, process_sd, processes), rounds)
    logs = math.log(truth) + effects + rng.normal(0, ROUND_SD, processes * rounds)
    return logs, np.repeat(np.arange(processes), rounds)


def _groups(logs, labels):
    return groups(logs, labels, 0.0, 8)


def test_the_pooled_variance_estimates_the_process_effect_from_many_two_process_comparisons():
    rng = np.random.default_rng(5)
    comparisons = [_groups(*_comparison(rng, 1.5)) for _ in range(400)]
    between = pooled(comparisons)
    assert between.comparisons == 400 and between.df == 400
    assert math.sqrt(between.variance) == pytest.approx(PROCESS_SD, rel=0.15)
    assert 0.015 < between.relative < 0.025


def test_no_comparison_of_several_processes_pools_nothing():
    one = Group(0.1, 0.0001, 4, 5)
    assert pooled([[one], []]) is None
    assert pooled([[one, Group(0.2, math.nan, 0, 1)]]) is None


def test_two_processes_with_the_run_pool_cover_a_repeat_run_and_one_process_does_not():
    # A run of 27 comparisons (as the quick profile's); for each, the interval from two processes
    # and the run's pool must cover the true ratio about 95% of the time; the interval of one
    # process's rounds alone (the earlier design) covers far less under the same process effect.
    rng = np.random.default_rng(17)
    two = one = total = 0
    for _ in range(150):
        run = [_comparison(rng, 2.0, processes=2, rounds=ROUNDS) for _ in range(27)]
        between = pooled([_groups(*c) for c in run])
        for logs, labels in run:
            r = round_ratio(np.exp(logs), np.ones(len(logs)), groups=labels, between=between)
            alone = round_ratio(np.exp(logs[labels == 0]), np.ones(ROUNDS))
            two += r.low <= 2.0 <= r.high
            one += alone.low <= 2.0 <= alone.high
            total += 1
    assert 0.93 <= two / total <= 0.975
    assert one / total < 0.90


def test_the_pool_keeps_the_interval_narrow_where_one_comparison_alone_could_not():
    # Two processes alone give one degree of freedom where their means differ beyond what their
    # rounds explain (t = 12.7): most intervals come out wider than the quick profile's +-5%. With
    # the run's pool nearly all are within it.
    rng = np.random.default_rng(3)
    draws = [_groups(*_comparison(rng, 1.3)) for _ in range(500)]

    def within_5_percent(between):
        hits = 0
        for summary in draws:
            _, se, df = combined(summary, between)
            hits += float(scipy_stats.t.ppf(0.975, df)) * se < math.log(1.05)
        return hits / len(draws)

    assert within_5_percent(Between(PROCESS_SD**2, 50, 50)) > 0.9
    assert within_5_percent(None) < 0.6


def test_processes_that_disagree_beyond_the_pool_keep_their_own_few_degrees_of_freedom():
    # One comparison's processes differ by 12% where the run's pool says about 1%: its interval
    # takes its own spread with one degree of freedom, so the outcome is inconclusive, not a word.
    a = Group(math.log(2.0), 0.0001, 4, 5)
    b = Group(math.log(2.0 * 1.12), 0.0001, 4, 5)
    mean, se, df = combined([a, b], Between(0.01**2, 50, 50))
    assert df == 1 and se > 0.05
    rounds = [Round(Block(1, 0.2), Block(1, 0.1), process=0)] * 5 + \
             [Round(Block(1, 0.224), Block(1, 0.1), process=1)] * 5
    rounds = [Round(Block(1, r.a.seconds * (1 + 0.001 * i)), r.b, process=r.process) for i, r in enumerate(rounds)]
    outcome = paired(rounds, between=Between(0.01**2, 50, 50))
    assert outcome.processes == 2 and outcome.difference is Difference.INCONCLUSIVE
    assert outcome.why is Why.PROCESSES_DISAGREE
    assert speedup_words(outcome).startswith("inconclusive: its processes disagreed beyond the run's variation")


def test_the_comparison_figures_pool_per_profile_over_speedups_measured_in_processes():
    rng = np.random.default_rng(8)

    def row(profile: str, processes: int, name: str = "x.Pairs.track_speedup"):
        logs, labels = _comparison(rng, 1.5, processes=processes)
        rounds = [Round(Block(1, 0.1 * math.exp(v)), Block(1, 0.1), process=int(g)).to_dict()
                  for v, g in zip(logs, labels)]
        return SimpleNamespace(rounds={"rounds": rounds, "plan": {"heavy": None}}, profile=profile), \
            SimpleNamespace(name=name)

    rows = [row("quick", 2) for _ in range(6)] + [row("full", 1)] + [row("quick", 2, "x.Pairs.time_call")]
    between = pooled_between(rows)
    assert set(between) == {"quick", "full"}
    assert between["quick"].comparisons == 6 and between["full"] is None
    groups = process_groups([Round.from_dict(r) for r in rows[0][0].rounds["rounds"]])
    assert [g.rounds for g in groups] == [ROUNDS, ROUNDS]


def test_the_words_say_how_many_processes_and_the_pool_they_were_judged_by():
    rounds = [Round(Block(1, 0.2 * (1 + 0.002 * (i % 3))), Block(1, 0.1), process=i % 2) for i in range(10)]
    outcome = paired(rounds, between=Between(0.013**2, 27, 27))
    assert outcome.difference is Difference.FASTER
    assert speedup_words(outcome) == ("faster (10 rounds in 2 processes; between processes ±1.3%, "
                                      "pooled over 27 speedups)")
