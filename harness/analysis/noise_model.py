"""The shape of a history's noise: one normal mode, or two (a machine that is sometimes slow).

Benchmark values often fall in two modes: most runs at one level, some 5-15% slower (CPU
frequency states, a neighbour on the machine). A rank test compares every pair of points, and
the pairs across the modes say nothing about a shift; a statistic that knows the modes measures
each point from its own mode, and on such a machine sees a 5% step about as a quiet machine
would (`proofbench.analysis.scan`).

`fit` reads the residuals of a history (each value less its segment's median) and keeps two
modes only where they are evident: BIC prefers them by `MARGIN` more than it must, they stand
at least `SEPARATION` scales apart, and the smaller holds at least `MIN_WEIGHT` of the points.
Otherwise the noise is one mode of the history's own noise scale.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SEPARATION = 2.5  # scales between the two modes' means, at least
MIN_WEIGHT = 0.05  # share of the points the smaller mode holds, at least
MARGIN = 3.0  # how much more than BIC asks (log-likelihood units) two modes must gain
MIN_POINTS = 20  # fewer residuals than this always give one mode
CLIP = 3.0  # one mode: a residual counts as at most this many scales in the deviance
EM_STEPS = 100
CONVERGED = 1e-5  # EM stops once no parameter moves more than this (scales, or weight)


@dataclass(frozen=True)
class NoiseModel:
    """Normal modes of the noise: `weights` (summing to 1), `means` (offsets from the mode the
    history is measured at, log scale), and their common `scale`."""

    weights: tuple[float, ...]
    means: tuple[float, ...]
    scale: float

    @property
    def modes(self) -> int:
        """1 or 2."""
        return len(self.weights)

    def scores(self, residuals: np.ndarray) -> np.ndarray:
        """Each residual's score for a shift, in scales: its distance from the mode it belongs
        to, averaged over the modes by how likely each is its mode (-d/dr log density x scale)."""
        d = self._distances(residuals)
        return (_responsibilities(self._log_terms(d)) * d).sum(axis=-1)

    def high_share(self, residuals: np.ndarray) -> np.ndarray:
        """How likely each residual is a run in the higher mode (0 with one mode): the slow one
        where values are times; for a higher-is-better metric the fast one, which serves a
        two-sided test alike (the two shares add up to 1)."""
        if self.modes == 1:
            return np.zeros(np.shape(residuals))
        terms = self._log_terms(self._distances(residuals))
        return _responsibilities(terms)[..., int(np.argmax(self.means))]

    def centre(self, values: np.ndarray) -> float:
        """The level of `values` under this noise: with two modes, the offset that makes them
        likeliest, searched on a grid about their median (one mode: the median)."""
        median = float(np.median(values))
        if self.modes == 1:
            return median
        reach = abs(self.means[1] - self.means[0]) + 2 * self.scale
        grid = median + np.linspace(-reach, reach, 41)
        d = self._distances(np.asarray(values, dtype=float)[None, :] - grid[:, None])
        return float(grid[int(np.argmax(_log_sum_exp(self._log_terms(d)).sum(axis=1)))])

    def log_likelihood(self, residuals: np.ndarray) -> float:
        """Sum of the log densities of `residuals` (less log sqrt(2 pi) a point)."""
        d = self._distances(residuals)
        return float(_log_sum_exp(self._log_terms(d)).sum() - len(residuals) * math.log(self.scale))

    def deviance(self, values: np.ndarray) -> float:
        """-2 log likelihood of a segment at its own level (one mode: squared scales, each
        clipped at CLIP, so that an outlier costs like a 3-sigma point)."""
        if self.modes == 1:
            r = (values - np.median(values)) / self.scale
            return float(np.minimum(r * r, CLIP * CLIP).sum()) + 2 * len(values) * math.log(self.scale)
        return -2.0 * self.log_likelihood(values - self.centre(values))

    def _distances(self, residuals: np.ndarray) -> np.ndarray:
        # residuals (any shape) from each mode's mean, in scales: one more axis, the modes
        return (np.asarray(residuals, dtype=float)[..., None] - np.array(self.means)) / self.scale

    def _log_terms(self, d: np.ndarray) -> np.ndarray:
        # log of each mode's weight times its normal density, less log(scale sqrt(2 pi))
        return np.log(self.weights) - 0.5 * d * d


def _log_sum_exp(terms: np.ndarray) -> np.ndarray:
    """log of the sum over the last axis (the modes), without overflow."""
    top = terms.max(axis=-1, keepdims=True)
    return np.log(np.exp(terms - top).sum(axis=-1)) + top[..., 0]


def _responsibilities(terms: np.ndarray) -> np.ndarray:
    """How likely each mode is a point's, from its log terms (last axis: the modes)."""
    p = np.exp(terms - terms.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def one_mode(scale: float) -> NoiseModel:
    """Plain normal noise of `scale`."""
    return NoiseModel((1.0,), (0.0,), scale)


def fit(residuals: np.ndarray, scale: float) -> NoiseModel:
    """Two modes where `residuals` show them (see the module docstring), else one of `scale`
    (the history's noise scale, which steps and outliers move least)."""
    r = np.asarray(residuals, dtype=float)
    n, sd = len(r), float(np.std(r))
    if n < MIN_POINTS or sd <= 0:
        return one_mode(scale)
    one = -0.5 * n * (math.log(2 * math.pi * sd * sd) + 1)
    two = _em(r)
    gain = two.log_likelihood(r) - 0.5 * n * math.log(2 * math.pi) - one
    apart = abs(two.means[1] - two.means[0]) / two.scale
    if gain > 1.5 * math.log(n) + MARGIN and apart > SEPARATION and min(two.weights) > MIN_WEIGHT:
        return two
    return one_mode(scale)


def _em(r: np.ndarray) -> NoiseModel:
    """Two normal modes of a common scale fitted by expectation-maximisation, started at the
    residuals' 25th and 90th percentiles (the slow mode is the smaller)."""
    means = np.quantile(r, [0.25, 0.9])
    weights = np.array([0.7, 0.3])
    scale = max(float(np.std(r)) / 2, 1e-12)
    for _ in range(EM_STEPS):
        model = NoiseModel(tuple(weights), tuple(means), scale)
        p = _responsibilities(model._log_terms(model._distances(r)))
        new_weights = np.clip(p.mean(axis=0), 1e-3, 1.0)
        new_weights /= new_weights.sum()
        new_means = (p * r[:, None]).sum(axis=0) / np.maximum(p.sum(axis=0), 1e-12)
        new_scale = max(math.sqrt(float((p * (r[:, None] - new_means[None, :]) ** 2).sum()) / len(r)), 1e-12)
        moved = max(float(np.abs(new_means - means).max()) / scale, abs(new_scale / scale - 1.0),
                    float(np.abs(new_weights - weights).max()))
        weights, means, scale = new_weights, new_means, new_scale
        if moved < CONVERGED:
            break
    return NoiseModel(tuple(float(w) for w in weights), tuple(float(m) for m in means), scale)
