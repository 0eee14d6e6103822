"""The sensitive pass's parts: the noise's modes, the scan statistics and their null laws."""
from __future__ import annotations

import math

import numpy as np
import pytest

from proofbench.analysis import noise_model, scan
from proofbench.analysis.noise_model import NoiseModel, one_mode


def _bimodal(rng: np.random.Generator, n: int, slow: float = 0.25, gap: float = 0.10, cv: float = 0.015) -> np.ndarray:
    # log values of a machine that is sometimes `gap` slower
    return rng.normal(0.0, cv, n) + (rng.random(n) < slow) * math.log1p(gap)


def test_plain_noise_is_one_mode_of_the_history_scale():
    r = np.random.default_rng(1).normal(0.0, 0.03, 150)
    model = noise_model.fit(r, 0.031)
    assert model == one_mode(0.031)


def test_a_machine_that_is_sometimes_slow_is_two_modes():
    r = _bimodal(np.random.default_rng(2), 150)
    model = noise_model.fit(r - np.median(r), 0.05)
    assert model.modes == 2
    assert abs(model.means[1] - model.means[0]) == pytest.approx(math.log(1.10), abs=0.01)
    assert min(model.weights) == pytest.approx(0.25, abs=0.08)
    assert model.scale == pytest.approx(0.015, rel=0.25)


def test_rare_outliers_are_not_a_second_mode():
    rng = np.random.default_rng(3)
    r = rng.normal(0.0, 0.02, 200)
    r[rng.choice(200, 5, replace=False)] += np.log(rng.uniform(1.5, 3.0, 5))
    assert noise_model.fit(r, 0.02).modes == 1


def test_too_few_residuals_are_one_mode():
    r = _bimodal(np.random.default_rng(4), noise_model.MIN_POINTS - 1)
    assert noise_model.fit(r, 0.04).modes == 1


def test_scores_measure_each_point_from_its_own_mode():
    model = NoiseModel((0.75, 0.25), (0.0, 0.1), 0.01)
    scores = model.scores(np.array([0.0, 0.1, 0.02, 0.12]))
    assert scores == pytest.approx([0.0, 0.0, 2.0, 2.0], abs=1e-3)
    assert model.centre(np.array([0.05, 0.05, 0.05, 0.15])) == pytest.approx(0.05, abs=0.01)


def test_one_mode_deviance_counts_an_outlier_as_three_scales():
    model = one_mode(1.0)
    base = model.deviance(np.zeros(9))
    assert model.deviance(np.array([0.0] * 8 + [100.0])) - base == pytest.approx(9.0)


def test_rank_null_tables_cover_every_length_conservatively():
    lengths = [scan.table_length(n) for n in range(7, 600)]
    assert all(t >= n for t, n in zip(lengths, range(7, 600)))
    assert len(set(lengths)) < 140  # long segments share tables on the grid
    assert scan.table_length(64) == 64


@pytest.mark.parametrize("two_modes", [False, True])
def test_the_scan_rejects_a_segment_without_a_step_at_its_level(two_modes):
    rng = np.random.default_rng(5)
    model = NoiseModel((0.75, 0.25), (0.0, math.log(1.1)), 0.015) if two_modes else one_mode(0.03)
    alpha, trials = 0.05, 300
    hits = 0
    for _ in range(trials):
        y = _bimodal(rng, 40) if two_modes else rng.normal(0.0, 0.03, 40)
        hits += scan.scan(y, model)[0] <= alpha
    # binomial(300, 0.05): mean 15, sd 3.8
    assert 3 <= hits <= 28


def test_knowing_the_modes_finds_a_small_step_the_ranks_miss():
    rng = np.random.default_rng(6)
    model = NoiseModel((0.75, 0.25), (0.0, math.log(1.12)), 0.015)
    by_modes = by_ranks = 0
    for _ in range(60):
        y = _bimodal(rng, 30, gap=0.12)
        y[12:] += math.log(1.05)
        by_modes += scan.scan(y, model)[0] <= 0.015
        by_ranks += scan.scan(y, one_mode(0.05))[0] <= 0.015
    assert by_modes >= 50 and by_ranks <= 40


def test_split_finds_each_step_of_a_segment_and_nothing_in_noise():
    rng = np.random.default_rng(7)
    y = rng.normal(0.0, 0.01, 90)
    y[30:] += 0.05
    y[60:] -= 0.08
    assert scan.split(y, 0, 90, 0.015, one_mode(0.01)) == [30, 60]
    assert scan.split(rng.normal(0.0, 0.01, 90), 0, 90, 0.015, one_mode(0.01)) == []


def test_a_fixed_split_is_tested_without_the_search():
    rng = np.random.default_rng(8)
    model = NoiseModel((0.75, 0.25), (0.0, math.log(1.1)), 0.015)
    y = _bimodal(rng, 40)
    y[20:] += math.log(1.04)
    assert scan.fixed_p(y, 20, model) < 0.01
    assert scan.fixed_p(y, 1, model) == 1.0


def test_a_change_in_how_often_runs_are_slow_is_tested_by_their_share():
    # 40 runs on a machine slow a quarter of the time, then 5 runs: all slow (what a step up onto
    # the slow mode's level looks like), all fast (as likely as 0.75 ** 5 = 0.24 on that machine).
    model = NoiseModel((0.75, 0.25), (0.0, math.log(1.1)), 0.015)
    before = _bimodal(np.random.default_rng(9), 40)
    rng = np.random.default_rng(10)
    slow = np.r_[before, rng.normal(math.log(1.1), 0.015, 5)]
    fast = np.r_[before, rng.normal(0.0, 0.015, 5)]
    assert scan.share_p(slow, 40, model) < 0.01
    assert scan.share_p(fast, 40, model) > 0.1
    assert scan.share_p(fast, 0, model) == scan.share_p(fast, 45, model) == 1.0
    # in a direction: the other way is no step; one mode throughout, no test
    assert scan.share_p(slow, 40, model, direction=1) == scan.share_p(slow, 40, model)
    assert scan.share_p(slow, 40, model, direction=-1) == scan.share_p(fast, 40, model, direction=1) == 1.0
    apart = NoiseModel((0.75, 0.25), (0.0, math.log(1.5)), 0.015)  # shares of 1e-80 and less
    assert scan.share_p(rng.normal(0.0, 0.015, 45), 40, apart) == 1.0
    shares = model.high_share(np.array([0.0, math.log(1.1)]))
    assert shares[0] < 0.01 and shares[1] > 0.99
    assert one_mode(0.015).high_share(np.array([0.0, 1.0])).tolist() == [0.0, 0.0]
