"""The speedup statistics: a ratio's estimate, interval and significance from samples."""
import itertools
import math

import numpy as np
import pytest

from proofbench.stats import MIN_ROUNDS, MIN_SAMPLES, Reduction, round_ratio, speedup, spread


def _brute_force_interval(b, v):
    # Independent computation: all pairwise ratios, sorted; the Mann-Whitney critical rank.
    ratios = sorted(x / y for x, y in itertools.product(b, v))
    n, m = len(b), len(v)
    k = math.floor(n * m / 2 - 1.959963984540054 * math.sqrt(n * m * (n + m + 1) / 12) - 0.5)
    # The median of an even count is taken on log-ratios (the geometric mean of the middle pair).
    return ratios[k], ratios[n * m - 1 - k], float(np.exp(np.median(np.log(ratios))))


def test_known_case_interval_matches_pairwise_ratios():
    baseline = [2.0, 2.1, 2.2, 2.05, 2.15, 1.95, 2.3, 2.02]
    variant = [1.0, 1.05, 0.98, 1.1, 1.02, 0.99, 1.04]
    s = speedup(baseline, variant)
    low, high, median = _brute_force_interval(baseline, variant)
    assert s.estimate == pytest.approx(median, rel=1e-12)
    assert (s.low, s.high) == (pytest.approx(low), pytest.approx(high))
    assert s.low <= s.estimate <= s.high
    assert s.significant and s.difference == "faster"


def test_exact_ratio_gives_degenerate_interval():
    s = speedup([3.0] * 6, [1.5] * 6)
    assert (s.estimate, s.low, s.high) == (pytest.approx(2.0), pytest.approx(2.0), pytest.approx(2.0))


def test_slower_variant_is_called_slower():
    s = speedup([1.0, 1.01, 0.99, 1.02, 0.98, 1.0], [2.0, 2.02, 1.98, 2.01, 1.99, 2.03])
    assert s.estimate == pytest.approx(0.5, rel=0.02)
    assert s.difference == "slower"


def test_identical_distributions_are_not_significant():
    rng = np.random.default_rng(0)
    b, v = rng.normal(1.0, 0.05, 20), rng.normal(1.0, 0.05, 20)
    s = speedup(b, v)
    assert not s.significant and s.difference == "no significant difference"
    assert s.low < 1 < s.high


def test_too_few_samples_is_said_not_guessed():
    s = speedup([2.0] * (MIN_SAMPLES - 1), [1.0] * 10)
    assert not s.enough_samples and s.difference == "too few samples"


def test_no_samples_gives_nan():
    s = speedup([], [1.0, 2.0])
    assert math.isnan(s.estimate)


def test_spread_flags_noise_above_ten_percent():
    assert not spread([1.0, 1.01, 0.99, 1.0]).noisy
    assert spread([1.0, 1.5, 0.7, 1.2]).noisy


def test_reduction_fraction_and_factor():
    r = Reduction(baseline=1000.0, variant=600.0)
    assert r.fraction == pytest.approx(0.4)
    assert r.factor == pytest.approx(1000 / 600)


def test_round_ratio_is_the_geometric_mean_of_round_ratios_with_a_t_interval():
    base = [2.0, 2.2, 1.9, 2.1, 2.05]
    variant = [1.0, 1.05, 1.0, 0.98, 1.02]
    r = round_ratio(base, variant)
    logs = np.log(np.array(base) / np.array(variant))
    se = logs.std(ddof=1) / math.sqrt(len(logs))
    t = 2.7764451051977987  # Student's t, 97.5%, 4 degrees of freedom
    assert r.estimate == pytest.approx(math.exp(logs.mean()))
    assert (r.low, r.high) == (pytest.approx(math.exp(logs.mean() - t * se)), pytest.approx(math.exp(logs.mean() + t * se)))
    assert r.rounds == 5 and r.p_value < 0.001


def test_round_ratio_covers_the_true_ratio_about_95_percent_of_the_time():
    # Rounds share a between-round effect (load that comes and goes) that hits both sides alike,
    # plus independent noise: the interval must cover the true ratio (1.5) at its nominal rate.
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(2000):
        shared = rng.normal(0, 0.2, 8)
        base = 1.5 * np.exp(shared + rng.normal(0, 0.03, 8))
        variant = np.exp(shared + rng.normal(0, 0.03, 8))
        r = round_ratio(base, variant)
        covered += r.low <= 1.5 <= r.high
    assert 0.93 <= covered / 2000 <= 0.97


def test_round_ratio_needs_rounds_and_leaves_out_missing_ones():
    r = round_ratio([1.0, 2.0, None, 0.0], [1.0, 1.0, 1.0, 1.0])
    assert r.rounds == 2 < MIN_ROUNDS and math.isnan(r.estimate) and r.half_width == math.inf
    same = round_ratio([2.0] * 4, [1.0] * 4)
    assert (same.estimate, same.low, same.high, same.half_width) == (2.0, 2.0, 2.0, 0.0)
