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
mistaken for a difference. Rounds that came from several processes carry the process as a
group: the interval then also holds the variation between processes. `paired` applies it to
stored rounds (`proofbench.rounds.Round`: each side's block of calls, seconds and other
processes' load): rounds whose two sides saw unequal load are left out, and the outcome is
faster, slower, no significant difference, or inconclusive with the reason (`Why`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Sequence

import numpy as np
from scipy import stats as _stats

from proofbench.rounds import Block, Round
from proofbench.variation import Between, Group, combined, disagree
from proofbench.variation import groups as _summaries

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
    INCONCLUSIVE = "inconclusive"


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
        """What the samples say: faster, slower, no significant difference, or inconclusive
        (too few samples to tell)."""
        if not self.enough_samples:
            return Difference.INCONCLUSIVE
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
    """A ratio estimated from paired rounds: `estimate` = geometric mean of the rounds' ratios
    (trimmed, where `round_ratio` was asked to trim).

    `low`/`high` bound it at the requested confidence (Student's t on the log ratios, the
    round as the unit); `p_value` tests "no difference" (ratio 1). NaN where undefined.
    `disagreed`: the rounds' processes differed beyond the pooled variation between processes
    (`proofbench.variation.disagree`), so the interval is their own spread.
    """

    estimate: float
    low: float
    high: float
    p_value: float
    rounds: int
    disagreed: bool = False

    @property
    def half_width(self) -> float:
        """The interval's half width relative to the estimate (0.05 = within +-5%)."""
        if not (self.estimate > 0 and self.low > 0 and self.high > 0):
            return math.inf
        return max(self.estimate / self.low, self.high / self.estimate) - 1.0


MIN_ROUNDS = 3  # a t interval needs two degrees of freedom to mean anything
TRIM_FROM = 8  # rounds: below, trimming widens a clean interval more than it narrows a dirty one
PAIRED_TRIM = 0.2  # share of rounds trimmed at each end by `paired` (measured: 95% coverage kept on
# clean rounds at +10% width; with 10% of rounds hit by a burst, 2-3x narrower than the plain mean)


def round_ratio(numerators: Sequence[float], denominators: Sequence[float], confidence: float = 0.95,
                groups: Sequence[int] | None = None, trim: float = 0.0, between: Between | None = None,
                orders: Sequence[bool] | None = None, between_runs: float = 0.0) -> RoundRatio:
    """numerator / denominator from rounds in which both were measured back to back.

    `numerators[i]` and `denominators[i]` are round i's summary (e.g. median time) of each side;
    rounds where either is missing, zero or not finite are left out. `groups[i]` names the
    process that measured round i; with rounds from more than one process the estimate is the
    mean of the processes' means and the interval holds the variation between processes, pooled
    over a run's comparisons where `between` is given (see `proofbench.variation`). `trim` > 0
    makes each process's estimate the trimmed mean of its rounds' log ratios with the
    Tukey-McLaughlin interval (Winsorized variance), from `TRIM_FROM` rounds on: a round hit by
    a preemption or a burst on one side then moves neither the estimate nor the width much.
    `orders[i]` says whether the numerator's side went first in round i: where given, what going
    first is worth is taken out of each process's rounds (`proofbench.variation.groups`).
    `between_runs` (a fraction: 0.01 = 1%) is the standard deviation of the ratio from one run to
    the next that no run's rounds show, added to the estimate's variance as a known part
    (`with_runs`).
    """
    logs, labels, firsts = _logs(numerators, denominators, groups, orders)
    n = len(logs)
    if n < MIN_ROUNDS:
        nan = math.nan
        return RoundRatio(nan, nan, nan, nan, n)
    parts = _summaries(logs, labels, trim, TRIM_FROM, firsts)
    if len(parts) > 1:
        mean, se, df = combined(parts, between)
    else:
        mean, se, df = parts[0].mean, math.sqrt(parts[0].variance), parts[0].df
    disagreed = len(parts) > 1 and between is not None and disagree(parts, between)
    se, df = with_runs(se, df, between_runs)
    if se == 0.0:
        value = math.exp(mean)
        return RoundRatio(value, value, value, 0.0 if mean else 1.0, n, disagreed)
    t = float(_stats.t.ppf(0.5 + confidence / 2, df))
    p_value = float(2 * _stats.t.sf(abs(mean) / se, df))
    return RoundRatio(math.exp(mean), math.exp(mean - t * se), math.exp(mean + t * se), p_value, n, disagreed)


def with_runs(se: float, df: float, between_runs: float) -> tuple[float, float]:
    """A log ratio's standard error and degrees of freedom with the variation between runs
    (`between_runs`, a fraction) added as a known variance: it comes from the profile, not from
    these rounds, so it adds no uncertainty of its own (Welch-Satterthwaite with infinite degrees
    of freedom for it: the rounds' part keeps its own)."""
    if not between_runs > 0:
        return se, df
    extra = math.log1p(between_runs) ** 2
    total = se * se + extra
    return math.sqrt(total), (df * (total / (se * se)) ** 2 if se > 0 else math.inf)


def _logs(numerators: Sequence[float], denominators: Sequence[float], groups: Sequence[int] | None,
          orders: Sequence[bool] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    # the rounds' log ratios, their processes and orders, rounds with a missing or bad side left out
    groups = [0] * len(numerators) if groups is None else list(groups)
    firsts = [True] * len(numerators) if orders is None else list(orders)
    rows = [(a, b, g, f) for a, b, g, f in zip(numerators, denominators, groups, firsts)
            if a is not None and b is not None and a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)]
    logs = np.log([r[0] for r in rows]) - np.log([r[1] for r in rows]) if rows else np.array([])
    return logs, np.asarray([r[2] for r in rows]), None if orders is None else np.asarray([r[3] for r in rows], bool)


# -- paired rounds: their outcome ----------------------------------------------------

MOST_ROUNDS_LEFT_OUT = 0.5  # more than this share of rounds left out: the two sides did not see like conditions


class Why(StrEnum):
    """Why a paired outcome is what it is; `proofbench.reports.formatting` puts it in words."""

    INTERVAL = "the interval decides"
    TOO_FEW_ROUNDS = "too few rounds"
    TOO_NOISY = "interval wider than the precision asked for"
    UNEQUAL_LOAD = "the two sides did not see like load"
    NOT_PAIRED = "baseline and variant measured in separate processes"
    PROCESSES_DISAGREE = "the processes disagreed beyond the run's variation between processes"
    UNDECIDED = "the interval holds no difference and one beyond the precision"
    BORDERLINE = "an edge of the interval lies within the variation between runs of no difference"
    NOT_NEGLIGIBLE = "the interval holds no difference and one beyond the profile's no_difference"


# Outcomes of an interval decided enough (enough rounds, like load, within the precision) but too
# close to 1 for a word: more rounds may still decide it, and a claim beyond it is out of reach.
NEAR_ONE = (Why.UNDECIDED, Why.BORDERLINE, Why.NOT_NEGLIGIBLE)


@dataclass(frozen=True)
class Paired:
    """a / b from stored rounds, with what was left out and the outcome.

    `ratio` is `round_ratio` over the kept rounds (grouped by process; trimmed by `PAIRED_TRIM`
    within one process), or over all rounds where too few were kept (a figure to show, with an
    inconclusive outcome); `rounds` counts all, `kept` those whose sides saw like load;
    `load_a`/`load_b` are the mean loads of all rounds; `processes` how many processes measured
    them, and `between` the run's pooled variation between processes that the interval holds
    (None: one process, or none pooled); `between_runs` the variation from one run to the next
    that it holds too (the profile's, or the subject's own), and `no_difference` the widest
    difference a "no significant difference" left open (0: the precision).
    """

    ratio: RoundRatio
    rounds: int
    kept: int
    load_a: float | None
    load_b: float | None
    difference: Difference
    why: Why
    processes: int = 1
    between: Between | None = None
    between_runs: float = 0.0
    no_difference: float = 0.0

    @property
    def estimate(self) -> float:
        return self.ratio.estimate

    @property
    def low(self) -> float:
        return self.ratio.low

    @property
    def high(self) -> float:
        return self.ratio.high

    @property
    def p_value(self) -> float:
        return self.ratio.p_value

    @property
    def significant(self) -> bool:
        """A decided difference: faster or slower."""
        return self.difference in (Difference.FASTER, Difference.SLOWER)

    @property
    def left_out(self) -> int:
        return self.rounds - self.kept


def unpaired(s: Speedup) -> Paired:
    """A speedup from samples of separate processes (results stored before rounds were): its
    figure is shown, but it decides nothing (between-process variation is not in its interval)."""
    return Paired(RoundRatio(s.estimate, s.low, s.high, s.p_value, 0), 0, 0, None, None,
                  Difference.INCONCLUSIVE, Why.NOT_PAIRED)


def _ratio(rounds: Sequence[Round], confidence: float, between: Between | None = None,
           between_runs: float = 0.0) -> RoundRatio:
    return round_ratio([r.a.per_call for r in rounds], [r.b.per_call for r in rounds], confidence,
                       groups=[r.process for r in rounds], trim=PAIRED_TRIM, between=between,
                       orders=[r.a_first for r in rounds], between_runs=between_runs)


def process_groups(rounds: Sequence[Round], heavy: float | None = None) -> list[Group]:
    """The kept rounds' log ratios summarised per process, as `round_ratio` sees them: what
    `proofbench.variation.pooled` pools over a run's comparisons."""
    kept = [r for r in rounds if r.comparable(heavy)]
    logs, labels, firsts = _logs([r.a.per_call for r in kept], [r.b.per_call for r in kept],
                                 [r.process for r in kept], [r.a_first for r in kept])
    return _summaries(logs, labels, PAIRED_TRIM, TRIM_FROM, firsts) if len(logs) else []


def _mean_load(blocks: list[Block]) -> float | None:
    loads = [x.load for x in blocks if x.load is not None]
    return float(np.mean(loads)) if loads else None


def paired(rounds: Sequence[Round], precision: float = 0.05, min_rounds: int = MIN_ROUNDS,
           heavy: float | None = None, confidence: float = 0.95, between: Between | None = None,
           between_runs: float = 0.0, no_difference: float = 0.0) -> Paired:
    """a / b (for time per call: b's speedup over a) from paired rounds, and its outcome.

    Inconclusive, with the reason, where fewer than `min_rounds` rounds are kept, where most
    rounds were left out for unequal load, or where the interval is wider than +- `precision`;
    otherwise the interval decides: above 1 faster, below 1 slower, within +- `no_difference`
    of 1 (0: the precision) no significant difference; one that holds 1 and reaches beyond
    that is inconclusive (it holds no difference and one that counts: a busy run's [0.91,
    1.00] beside quiet runs' "slower" at 0.91-0.93 read "no significant difference" before;
    and with the precision as the bound, a 2.5% slowdown whose runs read 0.96-0.99 at
    +-2.4-3.4% was "slower" in one run and "no significant difference" in the next, both true
    of it, slower by more than the margin and by no more than 5%, but opposite answers to a
    reader). A word needs the interval's edge clear of 1 by `between_runs`, the variation from
    one run to the next: an edge nearer than that, the next run may put on the other side of
    1, so the word would not repeat (an effect of 2% read "faster" in four of ten quiet runs
    and "no significant difference" in six, its lower edge at 0.999-1.004); such an interval
    is inconclusive.
    Rounds from several processes: see `round_ratio` (`between`: the run's pooled variation;
    `between_runs`: the variation from one run to the next, the profile's or the subject's own,
    which no run's rounds show).
    """
    kept = [r for r in rounds if r.comparable(heavy)]
    ratio = _ratio(kept, confidence, between, between_runs)
    if ratio.rounds < MIN_ROUNDS:
        ratio = _ratio(rounds, confidence, between, between_runs)  # the figure of all rounds is still shown; it decides nothing
    load_a, load_b = _mean_load([r.a for r in rounds]), _mean_load([r.b for r in rounds])
    difference, why = _outcome(ratio, len(rounds), len(kept), precision, min_rounds, between_runs,
                               no_difference or precision)
    if why is Why.TOO_NOISY and ratio.disagreed:
        why = Why.PROCESSES_DISAGREE
    processes = len({r.process for r in rounds})
    return Paired(ratio, len(rounds), len(kept), load_a, load_b, difference, why, processes,
                  between if processes > 1 else None, between_runs, no_difference)


def _outcome(ratio: RoundRatio, rounds: int, kept: int, precision: float,
             min_rounds: int, margin: float, negligible: float) -> tuple[Difference, Why]:
    if rounds and (rounds - kept) / rounds > MOST_ROUNDS_LEFT_OUT:
        return Difference.INCONCLUSIVE, Why.UNEQUAL_LOAD
    if kept < max(min_rounds, MIN_ROUNDS) or not math.isfinite(ratio.estimate):
        return Difference.INCONCLUSIVE, Why.TOO_FEW_ROUNDS
    if ratio.half_width > precision:
        return Difference.INCONCLUSIVE, Why.TOO_NOISY
    edge = 1.0 + margin  # an edge within this factor of 1 decides no word (see `paired`)
    if ratio.low > edge:
        return Difference.FASTER, Why.INTERVAL
    if ratio.high < 1.0 / edge:
        return Difference.SLOWER, Why.INTERVAL
    if ratio.low >= 1.0 / edge or ratio.high <= edge:
        return Difference.INCONCLUSIVE, Why.BORDERLINE
    if ratio.low < 1.0 / (1.0 + precision) or ratio.high > 1.0 + precision:
        return Difference.INCONCLUSIVE, Why.UNDECIDED
    if ratio.low < 1.0 / (1.0 + negligible) or ratio.high > 1.0 + negligible:
        return Difference.INCONCLUSIVE, Why.NOT_NEGLIGIBLE
    return Difference.NONE, Why.INTERVAL
