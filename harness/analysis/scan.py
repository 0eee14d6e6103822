"""One segment of a history searched for a step: scan statistics, their null laws, bisection.

A scan asks whether a segment of n points holds a step anywhere, and where: the largest
standardised two-sample statistic over every split with at least `MIN_SIDE` points a side,
judged against the largest one random orderings of the same segment give (the search over
positions is paid for in the p-value). `split` applies it recursively (binary segmentation):
a segment whose scan passes is cut at its best split, and each half is searched again.

- One noise mode: the Mann-Whitney statistic of the ranks (distribution-free, exact under
  exchangeable noise). Its null law depends on n alone, so it is computed once per length from
  `ORDERINGS` random permutations (seeded by the length, so a run repeats); lengths beyond
  `EXACT_UP_TO` share the table of the next length on a geometric grid (ratio `GRID`), which
  errs on the safe side: more positions, larger maxima.
- Two modes (`proofbench.analysis.noise_model`): the cumulative sum of the points' scores
  (each one's distance from its own mode), against `ORDERINGS` random orderings of the same
  scores: a permutation test, valid whatever the scores are.

`fixed_p` and `share_p` test one given split (no search), the second by how likely each point
is a run in the higher mode: a step onto the other mode's level, which distances from the modes
cannot see (`proofbench.analysis.detect` asks both of a suspected step on a two-mode history).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy.stats import rankdata

from proofbench.analysis.noise_model import NoiseModel

MIN_SIDE = 3  # points a side of a split, at least
ORDERINGS = 2000  # random orderings behind each null law
EXACT_UP_TO = 64  # segment lengths with a null table of their own
GRID = 1.1  # longer segments use the table of the next length on this geometric grid


def rank_statistics(ranks: np.ndarray) -> np.ndarray:
    """|z| of the Mann-Whitney statistic at every split k (MIN_SIDE <= k <= n - MIN_SIDE) of
    one ordering (1-d) or many (rows)."""
    n = ranks.shape[-1]
    k = np.arange(MIN_SIDE, n - MIN_SIDE + 1)
    below = np.cumsum(ranks, axis=-1)[..., k - 1] - k * (k + 1) / 2
    return np.abs(below - k * (n - k) / 2) / np.sqrt(k * (n - k) * (n + 1) / 12)


def cusum_statistics(scores: np.ndarray) -> np.ndarray:
    """|standardised cumulative sum| of scores at every split, of one ordering or many."""
    n = scores.shape[-1]
    k = np.arange(MIN_SIDE, n - MIN_SIDE + 1)
    sums = np.cumsum(scores, axis=-1)
    return np.abs(sums[..., k - 1] - k / n * sums[..., -1:]) / np.sqrt(k * (n - k) / n)


def _orderings(n: int) -> np.ndarray:
    # ORDERINGS permutations of n points, the same for every call with the same n
    return np.argsort(np.random.default_rng(n).random((ORDERINGS, n)), axis=1)


def table_length(n: int) -> int:
    """The length whose null table serves a segment of n points."""
    if n <= EXACT_UP_TO:
        return n
    return int(math.ceil(EXACT_UP_TO * GRID ** math.ceil(math.log(n / EXACT_UP_TO, GRID) - 1e-9)))


@functools.lru_cache(maxsize=None)
def _rank_null(n: int) -> np.ndarray:
    # the largest |z| of each random ordering of n ranks, sorted
    return np.sort(rank_statistics(_orderings(n) + 1.0).max(axis=1))


def _p(null: np.ndarray, observed: float) -> float:
    # (1 + orderings at least as extreme) / (orderings + 1)
    return (1 + len(null) - int(np.searchsorted(null, observed - 1e-12))) / (len(null) + 1)


def scan(y: np.ndarray, noise: NoiseModel) -> tuple[float, int]:
    """The scan p-value of segment `y` and its best split (the first index of the new level)."""
    if noise.modes == 1:
        stats = rank_statistics(rankdata(y))
        best = int(np.argmax(stats))
        return _p(_rank_null(table_length(len(y))), float(stats[best])), best + MIN_SIDE
    scores = _scores(y, noise)
    if scores is None:
        return 1.0, len(y) // 2
    stats = cusum_statistics(scores)
    best = int(np.argmax(stats))
    null = np.sort(cusum_statistics(scores[_orderings(len(y))]).max(axis=1))
    return _p(null, float(stats[best])), best + MIN_SIDE


def _scores(y: np.ndarray, noise: NoiseModel) -> np.ndarray | None:
    # each point's score about the segment's level; None where they are all alike (no test)
    scores = noise.scores(y - noise.centre(y))
    return None if float(np.std(scores)) == 0.0 else scores


def split(y: np.ndarray, lo: int, hi: int, alpha: float, noise: NoiseModel) -> list[int]:
    """The boundaries binary segmentation finds in y[lo:hi] at level `alpha` a scan, sorted."""
    if hi - lo < 2 * MIN_SIDE + 1:
        return []
    p, k = scan(y[lo:hi], noise)
    if p > alpha:
        return []
    k += lo
    return [*split(y, lo, k, alpha, noise), k, *split(y, k, hi, alpha, noise)]


def fixed_p(y: np.ndarray, k: int, noise: NoiseModel, direction: int = 0) -> float:
    """The permutation p-value of a step at the given split k of segment `y` (two-mode scores;
    no search over positions). With a `direction` (+1: y went up at k, -1: down), 1 where the
    points after k lean the other way."""
    if k < 2 or len(y) - k < 2:
        return 1.0
    return _fixed(_scores(y, noise), k, direction)


def share_p(y: np.ndarray, k: int, noise: NoiseModel, direction: int = 0) -> float:
    """The permutation p-value of a change at split k of segment `y` in how often its points
    fall in the higher mode (for a time, the slow one: a benchmark whose runs now always take
    the slow path, or never); `direction` as in `fixed_p`."""
    if k < 1 or len(y) - k < 1:
        return 1.0
    high = noise.high_share(y - noise.centre(y))
    return _fixed(None if float(np.ptp(high)) < 1e-9 else high, k, direction)


def _fixed(values: np.ndarray | None, k: int, direction: int) -> float:
    # the permutation p of the sum of values[:k] about its share of the whole (None: no test;
    # 1 where values[k:] lean against `direction`)
    if values is None:
        return 1.0
    n = len(values)
    if direction * (values[k:].sum() - (n - k) / n * values.sum()) < 0:
        return 1.0
    at = lambda v: np.abs(v[..., :k].sum(axis=-1) - k / n * v.sum(axis=-1))  # noqa: E731
    return _p(np.sort(at(values[_orderings(n)])), float(at(values)))
