"""Statistics on raw samples: the speedup of a variant over the baseline, with its interval.

The speedup is the Hodges-Lehmann estimate of the ratio of baseline to variant times: the
median of all pairwise ratios b_i / v_j. Its 95% interval is the distribution-free one that
inverts the Mann-Whitney U test (the order statistics of those ratios at the test's critical
count), so interval and significance test agree. Computed on log-times, so it is a ratio.
No word like "faster" is used unless the Mann-Whitney U test rejects equality first.

When two things were measured in alternating rounds (baseline and variant back to back, or
the commit before a step and the commit after it), `round_ratio` is the statistic: each round
gives one log ratio, the round is the unit, and the interval is Student's t over rounds, so
whatever varies between rounds (load that comes and goes, drift) widens it instead of being
mistaken for a difference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Sequence

import numpy as np
from scipy import stats as _stats

MIN_SAMPLES = 5  # with fewer per side, Mann-Whitney cannot reach p < 0.05 reliably
ALPHA = 0.05
NOISY_IQR = 0.10  # like torch.utils.benchmark's Measurement: IQR/median above 10% is noisy


@dataclass(frozen=True)
class Spread:
    """Median and interquartile range of one sample set."""

    n: int
    median: float
    iqr: float

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.median if self.median else math.inf

    @property
    def noisy(self) -> bool:
        """True when the spread is too wide to trust a small difference."""
        return self.relative_iqr > NOISY_IQR


def spread(samples: Sequence[float]) -> Spread:
    """Median and IQR of finite samples."""
    x = _finite(samples)
    if not len(x):
        return Spread(0, math.nan, math.nan)
    q25, q50, q75 = np.percentile(x, [25, 50, 75])
    return Spread(len(x), float(q50), float(q75 - q25))


class Difference(StrEnum):
    """The outcome of comparing two sample sets; the values are the words the reports use."""

    FASTER = "faster"
    SLOWER = "slower"
    NONE = "no significant difference"
    TOO_FEW = "too few samples"


@dataclass(frozen=True)
class Speedup:
    """How many times faster a variant is than the baseline (>1 faster, <1 slower)."""

    estimate: float
    low: float
    high: float
    p_value: float
    n_baseline: int
    n_variant: int

    @property
    def enough_samples(self) -> bool:
        return min(self.n_baseline, self.n_variant) >= MIN_SAMPLES

    @property
    def significant(self) -> bool:
        return self.enough_samples and self.p_value < ALPHA

    @property
    def difference(self) -> "Difference":
        """What the samples say: faster, slower, no significant difference, or too few to tell."""
        if not self.enough_samples:
            return Difference.TOO_FEW
        if not self.significant:
            return Difference.NONE
        return Difference.FASTER if self.estimate > 1 else Difference.SLOWER


def _finite(samples: Sequence[float] | None) -> np.ndarray:
    x = np.asarray([s for s in (() if samples is None else samples) if s is not None], dtype=float)
    return x[np.isfinite(x) & (x > 0)]


def speedup(baseline: Sequence[float], variant: Sequence[float], confidence: float = 0.95) -> Speedup:
    """Speedup of `variant` over `baseline` from raw time samples (seconds per call)."""
    b, v = np.log(_finite(baseline)), np.log(_finite(variant))
    n, m = len(b), len(v)
    if n == 0 or m == 0:
        return Speedup(math.nan, math.nan, math.nan, math.nan, n, m)
    diffs = np.sort(np.subtract.outer(b, v).ravel())
    with np.errstate(over="ignore"):  # a ratio beyond a float's range is infinite, and reads so
        estimate = float(np.exp(np.median(diffs)))
    p_value = float(_stats.mannwhitneyu(b, v, alternative="two-sided").pvalue) if min(n, m) > 0 else math.nan
    k = _critical_rank(n, m, confidence)
    if k is None:
        low, high = math.nan, math.nan
    else:
        with np.errstate(over="ignore"):
            low, high = float(np.exp(diffs[k])), float(np.exp(diffs[n * m - 1 - k]))
    return Speedup(estimate, low, high, p_value, n, m)


def _critical_rank(n: int, m: int, confidence: float) -> int | None:
    # Zero-based rank k such that [d_(k), d_(nm-1-k)] covers the shift with `confidence`
    # (normal approximation to the U distribution, with continuity correction).
    z = _stats.norm.ppf(0.5 + confidence / 2)
    k = math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12) - 0.5)
    return k if k >= 0 else None


@dataclass(frozen=True)
class Reduction:
    """How much less of something (memory, bytes) a variant uses: 0.3 = 30% less."""

    baseline: float
    variant: float

    @property
    def fraction(self) -> float:
        if not self.baseline or self.baseline != self.baseline:
            return math.nan
        return 1.0 - self.variant / self.baseline

    @property
    def factor(self) -> float:
        return self.baseline / self.variant if self.variant else math.inf


@dataclass(frozen=True)
class RoundRatio:
    """A ratio estimated from paired rounds: `estimate` = geometric mean of the rounds' ratios.

    `low`/`high` bound it at the requested confidence (Student's t on the log ratios, the
    round as the unit); `p_value` tests "no difference" (ratio 1). NaN where undefined.
    """

    estimate: float
    low: float
    high: float
    p_value: float
    rounds: int

    @property
    def half_width(self) -> float:
        """The interval's half width relative to the estimate (0.05 = within +-5%)."""
        if not (self.estimate > 0 and self.low > 0 and self.high > 0):
            return math.inf
        return max(self.estimate / self.low, self.high / self.estimate) - 1.0


MIN_ROUNDS = 3  # a t interval needs two degrees of freedom to mean anything


def round_ratio(numerators: Sequence[float], denominators: Sequence[float], confidence: float = 0.95) -> RoundRatio:
    """numerator / denominator from rounds in which both were measured back to back.

    `numerators[i]` and `denominators[i]` are round i's summary (e.g. median time) of each side;
    rounds where either is missing, zero or not finite are left out.
    """
    pairs = [(a, b) for a, b in zip(numerators, denominators)
             if a is not None and b is not None and a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)]
    n = len(pairs)
    if n < MIN_ROUNDS:
        nan = math.nan
        return RoundRatio(nan, nan, nan, nan, n)
    logs = np.log([a for a, _ in pairs]) - np.log([b for _, b in pairs])
    mean = float(np.mean(logs))
    sd = float(np.std(logs, ddof=1))
    if sd == 0.0:
        value = math.exp(mean)
        return RoundRatio(value, value, value, 0.0 if mean else 1.0, n)
    se = sd / math.sqrt(n)
    t = float(_stats.t.ppf(0.5 + confidence / 2, n - 1))
    p_value = float(2 * _stats.t.sf(abs(mean) / se, n - 1))
    return RoundRatio(math.exp(mean), math.exp(mean - t * se), math.exp(mean + t * se), p_value, n)
