"""Variation between processes: a pair measured in several processes, and that variation pooled.

A speedup measured in one process varies from one process to the next by more than its rounds
vary within one: what a process's preparation drew (where the weights and the inputs landed in
memory) is shared by all its rounds. Measured here with bf16 autocast inference latency
(`inference.half_precision_latency`): 2.28-2.59 across eight processes, 2.20-2.30 across eight
measurements in one; forked after the workload was prepared, 2.27-2.38; forked before,
2.27-2.57. An interval from one process's rounds cannot hold that.

So a pair is measured in a few processes (`proofbench.measure.processes`), each with its own
preparation, and the estimate is the mean of the processes' means (`Group`). With two or three
processes a comparison alone says little about how far processes differ (one or two degrees of
freedom), so that variance is pooled over the comparisons of one run on one machine
(`pooled`): each comparison's processes give an unbiased estimate of it (the variance of their
means less what their rounds' own spread explains), and the run's estimate is the mean of those,
with as many degrees of freedom as the comparisons' processes give together. A comparison whose
processes disagree far more than the pooled figure allows (an F test at 1%) keeps its own
estimate and its own few degrees of freedom: a wide interval, "inconclusive", not a confident word.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy import stats as _stats

HETEROGENEOUS = 0.01  # the F test's level for "this comparison's processes disagree beyond the pool"


@dataclass(frozen=True)
class Group:
    """One process's rounds on the log scale: their mean, the variance of that mean, its degrees
    of freedom, and how many rounds."""

    mean: float
    variance: float
    df: float
    rounds: int


@dataclass(frozen=True)
class Between:
    """The variance of one process's effect on a log ratio, pooled over `comparisons`, with its
    degrees of freedom."""

    variance: float
    df: float
    comparisons: int

    @property
    def relative(self) -> float:
        """Its standard deviation as a fraction of the ratio (0.013 = processes differ by about 1.3%)."""
        return math.expm1(math.sqrt(self.variance)) if self.variance > 0 else 0.0


def groups(logs: np.ndarray, labels: np.ndarray, trim: float, trim_from: int,
           firsts: np.ndarray | None = None) -> list[Group]:
    """Each process's rounds (log ratios, `labels` naming the process): their mean, the variance
    of that mean and its degrees of freedom; the trimmed mean (`trim` at each end, Tukey-McLaughlin)
    for a process of at least `trim_from` rounds. Processes of one round are left out while
    another has two or more.

    With `firsts` (whether the ratio's numerator went first in each round), a process whose rounds
    hold each order at least twice has the order's effect taken out first (`_in_order`), for one
    degree of freedom: the side that goes first in a round follows its own block of the round
    before, and that was worth up to 19% here (the LMDB reader's): a spread that is no noise,
    and that does not cancel where rounds left out for unequal load unbalance the orders."""
    out = []
    for g in dict.fromkeys(labels.tolist()):
        x, ordered = logs[labels == g], None if firsts is None else firsts[labels == g]
        if len(x) < 2:
            out.append(Group(float(np.mean(x)), math.nan, 0.0, len(x)))
            continue
        trimmed = bool(trim) and len(x) >= trim_from
        x, spent = _in_order(x, ordered, trim if trimmed else 0.0)
        mean, se, df = _trimmed(x, trim) if trimmed else _plain(x)
        if spent and df > 1:  # the spread about two fitted centres, not one: its sum of squares over df - 1
            se, df = se * math.sqrt(df / (df - 1)), df - 1
        out.append(Group(mean, se * se, df, len(x)))
    usable = [g for g in out if g.rounds >= 2]
    if not usable:  # no process with two rounds: the rounds as one group
        mean, se, df = _plain(logs)
        return [Group(mean, se * se, df, len(logs))]
    return usable


def _in_order(logs: np.ndarray, firsts: np.ndarray | None, trim: float = 0.0) -> tuple[np.ndarray, int]:
    """The log ratios less half the order's effect (the difference of the two orders' means,
    trimmed by `trim` as the estimate is) on each side of it, so both orders centre where the mean
    of their means does, and the degrees of freedom that cost (1, or 0 where the rounds do not hold
    each order twice). Measured on synthetic rounds, 6-20 of them, with and without a 10% effect:
    95-96% coverage (medians instead of means: 93.5-96%). Trimmed, because one round far off
    moved a plain mean of its order by its distance over the order's rounds, and so set the two
    orders apart: the batched text tokenizer's one slow round in 16 (a ratio of 1.1 among
    4.0-4.2) split the rounds into two clusters 17% apart that no trimming could take back
    (±8.7%)."""
    if firsts is None or min(int(firsts.sum()), int((~firsts).sum())) < 2:
        return logs, 0
    effect = _centre(logs[firsts], trim) - _centre(logs[~firsts], trim)
    return logs - np.where(firsts, effect / 2, -effect / 2), 1


def _centre(logs: np.ndarray, trim: float) -> float:
    # the mean of `logs` with `trim` of them left out at each end
    k = int(math.floor(trim * len(logs)))
    return float(np.mean(np.sort(logs)[k:len(logs) - k]))


def _plain(logs: np.ndarray) -> tuple[float, float, float]:
    # the mean log ratio, its standard error and degrees of freedom: rounds as independent units
    return float(np.mean(logs)), float(np.std(logs, ddof=1)) / math.sqrt(len(logs)), len(logs) - 1


def _trimmed(logs: np.ndarray, trim: float) -> tuple[float, float, float]:
    # Tukey-McLaughlin: the trimmed mean, its standard error from the Winsorized variance, and
    # h - 1 degrees of freedom for the h rounds kept (Wilcox, Introduction to Robust Estimation).
    n = len(logs)
    k = int(math.floor(trim * n))
    x = np.sort(logs)
    h = n - 2 * k
    winsorized = np.clip(x, x[k], x[n - 1 - k])
    se = float(np.std(winsorized, ddof=1)) * math.sqrt(n - 1) / math.sqrt(h * (h - 1))
    return _centre(x, trim), se, h - 1


def own(groups: Sequence[Group]) -> float:
    """One comparison's unbiased estimate of the between-process variance (it may be negative):
    the variance of its processes' means less the mean variance of those means."""
    means = [g.mean for g in groups]
    return float(np.var(means, ddof=1)) - float(np.mean([g.variance for g in groups]))


def pooled(comparisons: Iterable[Sequence[Group]]) -> Between | None:
    """The between-process variance pooled over comparisons measured in two or more processes
    (each of at least two rounds); None where there are none."""
    terms, df = [], 0
    for groups in comparisons:
        usable = [g for g in groups if g.rounds >= 2 and math.isfinite(g.mean) and math.isfinite(g.variance)]
        if len(usable) >= 2:
            terms.append(own(usable))
            df += len(usable) - 1
    if not terms:
        return None
    return Between(max(0.0, float(np.mean(terms))), float(df), len(terms))


def combined(groups: Sequence[Group], between: Between | None) -> tuple[float, float, float]:
    """The mean of the processes' means, its standard error and degrees of freedom.

    With a pooled `between`, the variance is the processes' own (their rounds' spread) plus the
    pooled between-process part, degrees of freedom by Welch-Satterthwaite, unless this
    comparison's processes disagree beyond it (see the module docstring). Without one, the
    spread of the processes' means is used where it exceeds what their rounds explain (k - 1
    degrees of freedom), else the rounds' spread alone.
    """
    k = len(groups)
    mean = float(np.mean([g.mean for g in groups]))
    within = sum(g.variance for g in groups) / k**2
    within_df = _satterthwaite([(g.variance / k**2, g.df) for g in groups])
    spread = float(np.var([g.mean for g in groups], ddof=1)) / k
    if between is None or disagree(groups, between):
        if spread > within or between is not None:
            return mean, math.sqrt(spread), k - 1
        return mean, math.sqrt(within), within_df
    part = between.variance / k
    return mean, math.sqrt(within + part), _satterthwaite([(within, within_df), (part, between.df)])


def disagree(groups: Sequence[Group], between: Between) -> bool:
    """Whether these processes' means differ beyond what the pooled `between` and their own
    rounds explain: Q = sum((m_g - m)^2 / (between + v_g)) over k - 1 against the F distribution
    at `HETEROGENEOUS`, its second degrees of freedom those of the variances Q divides by (a
    process of three rounds knows its own spread to two: a chi-square test took that
    estimate as exact and cried "disagree" at one comparison in six here)."""
    usable = [g for g in groups if between.variance + g.variance > 0]
    if len(usable) < 2:
        return False
    k = len(usable)
    mean = float(np.mean([g.mean for g in usable]))
    q = sum((g.mean - mean) ** 2 / (between.variance + g.variance) for g in usable)
    df = _satterthwaite([(g.variance, g.df) for g in usable] + [(between.variance, between.df)])
    return q / (k - 1) > float(_stats.f.ppf(1 - HETEROGENEOUS, k - 1, df))


def _satterthwaite(parts: list[tuple[float, float]]) -> float:
    # the degrees of freedom of a sum of variance estimates, each with its own
    total = sum(v for v, _ in parts)
    denominator = sum(v * v / df for v, df in parts if df > 0 and v > 0)
    return total * total / denominator if denominator > 0 else max(1.0, min(df for _, df in parts))
