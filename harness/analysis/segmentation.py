"""A whole history cut into segments: boundaries proposed, tested, searched for, and weighed.

`settle` does what `proofbench.analysis.detect`'s module docstring lists: the strict boundaries
(Potts proposals kept by backward elimination), the sensitive pass (each segment scanned for a
step the strict gates missed, `proofbench.analysis.scan`, the weak boundaries tested again
between their neighbours), the same with the history's slope removed, the reading of lower
deviance under the history's own noise (`proofbench.analysis.noise_model`) plus what its
boundaries and drift cost, and short excursions dropped.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
from asv.step_detect import solve_potts_approx

from proofbench.analysis import noise_model, scan
from proofbench.analysis.noise_model import NoiseModel
from proofbench.analysis.shift import (
    Series,
    Test,
    Tuning,
    evaluate,
    median,
    share_after,
    slope_shows_before,
    with_slope,
)

REFITS = 2  # readings with a drift: the slope within the strict segments, then within the sensitive ones
THEIL_SEN_BREAKDOWN = 0.5  # the share of its pairs that can carry a Theil-Sen slope anywhere (29% of its points)


@dataclass(frozen=True)
class Boundary:
    """One boundary of the final segmentation: its test between its neighbours (at the caller's
    gates) and whether it passes them (`decided`) or only the sensitive pass found it."""

    test: Test
    decided: bool


@dataclass(frozen=True)
class Reading:
    """A segmentation of one reading of the history (with or without its drift): the series
    it was made on, the boundaries' tests (sensitive pass), and its cost."""

    series: Series
    tests: tuple[Test, ...]
    cost: float
    noise: NoiseModel


def settle(s: Series, alpha: float, tuning: Tuning) -> tuple[Series, list[Boundary], NoiseModel]:
    """The final segmentation of `s`, the series it holds on (detrended where the history
    drifts), each boundary tested at `alpha` and `tuning`'s gates, and the noise model of the
    reading kept (two modes where its segments show a machine that is sometimes slow)."""
    candidates = proposals(s, tuning)
    best = _reading(s, alpha, tuning, 0.0, candidates)
    bounds = [t.window[1] for t in keep(s, candidates, alpha, tuning)]
    for _ in range(REFITS):
        drifting = with_slope(s, bounds)
        if not drifting.drift or not _drifts_early(drifting, bounds, tuning):
            break
        reading = _reading(drifting, alpha, tuning, tuning.drift_cost, proposals(drifting, tuning))
        best = reading if reading.cost < best.cost else best
        found = [t.window[1] for t in reading.tests]
        if found == bounds:
            break
        bounds = found
    final = transients(best.series, [t.window[1] for t in best.tests], tuning)
    return best.series, _gated(best.series, final, alpha, tuning), best.noise


def _drifts_early(s: Series, bounds: list[int], tuning: Tuning) -> bool:
    """Whether the slope stands without the history's last `suspect_after` points. Where the
    pairs that reach them are more than Theil-Sen's breakdown share of the pairs the slope is
    pooled from (half of them: 29% of the points; a history of about 17 points or fewer), a
    young step among them, no boundary yet, can set the slope alone, and the step would go out
    with the drift: there the slope must show before them too (`shift.slope_shows_before`)."""
    stop = len(s.y) - tuning.suspect_after
    return share_after(bounds, len(s.y), stop) < THEIL_SEN_BREAKDOWN or slope_shows_before(s, bounds, stop, tuning)


def _reading(s: Series, alpha: float, tuning: Tuning, extra: float, candidates: list[int]) -> Reading:
    tests, noise = sensitive(s, alpha, tuning, candidates)
    y = s.detrended()
    edges = [0, *(t.window[1] for t in tests), len(y)]
    cost = sum(noise.deviance(y[a:b]) for a, b in zip(edges, edges[1:]))
    return Reading(s, tuple(tests), cost + tuning.step_cost * len(tests) + extra, noise)


def sensitive(s: Series, alpha: float, tuning: Tuning, candidates: list[int]) -> tuple[list[Test], NoiseModel]:
    """The strict boundaries (no line guard: the drift is weighed as a whole instead), then each
    segment scanned at `scan_alpha` for more (with ranks, and again knowing the modes where the
    noise shows two), and the boundaries kept where they pass the weak gates between their
    neighbours; and the noise model. Where the residuals are serially correlated (`serial_z`),
    only the strict boundaries, line guard included. `candidates`: the Potts proposals on `s`."""
    unguarded = replace(tuning, line_t=math.inf)
    strict = keep(s, candidates, alpha, unguarded)
    bounds = [t.window[1] for t in strict]
    y = s.detrended()
    scanned = _scanned(y, bounds, s.sigma, tuning)
    if scanned is None:
        return keep(s, candidates, alpha, tuning), noise_model.one_mode(s.sigma)
    found, noise = scanned
    if not found:
        return strict, noise
    union = sorted({*bounds, *found})
    weak = replace(unguarded, z_min=tuning.weak_z)
    if noise.modes == 1:
        return keep(s, union, tuning.weak_p, weak), noise
    kept = _eliminate_by_scores(y, union, noise, tuning.weak_p)
    return [evaluate(s, window, tuning.weak_p, weak) for window in _windows(kept, len(y))], noise


def _scanned(y: np.ndarray, bounds: list[int], sigma: float, tuning: Tuning) -> tuple[list[int], NoiseModel] | None:
    """The boundaries the scans find in the strict segments and the noise model, or None where
    the points are not exchangeable. What the noise is like is read off the segments the rank
    scan leaves: a step the strict gates missed would otherwise look like a second mode, or
    like serial correlation."""
    found = _split_all(y, bounds, tuning.scan_alpha, noise_model.one_mode(sigma))
    parts = _residuals(y, sorted({*bounds, *found}))
    if _serial(parts) > tuning.serial_z:
        return None  # a trend that is no line, or seasons: no scan's null law holds
    noise = noise_model.fit(np.concatenate(parts) if parts else np.zeros(0), sigma)
    if noise.modes == 2:
        found = _split_all(y, bounds, tuning.scan_alpha, noise)
    return found, noise


def _serial(parts: list[np.ndarray]) -> float:
    """The lag-1 autocorrelation of the segments' residuals, in standard errors."""
    num = sum(float((r[1:] * r[:-1]).sum()) for r in parts)
    den = sum(float((r * r).sum()) for r in parts)
    lags = sum(max(len(r) - 1, 0) for r in parts)
    return num / den * math.sqrt(lags) if den > 0 and lags else 0.0


def _split_all(y: np.ndarray, bounds: list[int], alpha: float, noise: NoiseModel) -> list[int]:
    edges = [0, *bounds, len(y)]
    return [k for a, b in zip(edges, edges[1:]) for k in scan.split(y, a, b, alpha, noise)]


def _residuals(y: np.ndarray, bounds: list[int]) -> list[np.ndarray]:
    """Each segment's values less its median (segments of at least 3 points)."""
    edges = [0, *bounds, len(y)]
    return [y[a:b] - median(y[a:b]) for a, b in zip(edges, edges[1:]) if b - a >= 3]


def _windows(bounds: list[int], n: int) -> list[tuple[int, int, int]]:
    edges = [0, *bounds, n]
    return [(edges[j], k, edges[j + 2]) for j, k in enumerate(bounds)]


def _eliminate_by_scores(y: np.ndarray, bounds: list[int], noise: NoiseModel, p_max: float) -> list[int]:
    """Backward elimination on a two-mode history: a boundary passes where its scores'
    permutation p between its neighbours is at most `p_max`."""
    p = functools.cache(lambda w: scan.fixed_p(y[w[0]:w[2]], w[1] - w[0], noise))
    return [k for _, k, _ in _eliminate(bounds, len(y), lambda w: p_max / p(w))]


def _eliminate(bounds: list[int], n: int, strength: Callable[[tuple[int, int, int]], float]
               ) -> list[tuple[int, int, int]]:
    """Backward elimination: while a boundary's strength between its neighbours is under 1, the
    weakest goes; the windows (lo, k, hi) of those left."""
    bounds = sorted(bounds)
    while bounds:
        windows = _windows(bounds, n)
        strengths = [strength(w) for w in windows]
        worst = int(np.argmin(strengths))
        if strengths[worst] >= 1.0:
            return windows
        del bounds[worst]
    return []


def transients(s: Series, bounds: list[int], tuning: Tuning) -> list[int]:
    """`bounds` less the pairs that enclose a short excursion: at most `transient` points between
    two steps of opposite directions, with the levels outside them (at most `window` points a
    side) within `transient_z` standard errors of each other (a few runs on a busy machine)."""
    y, bounds = s.detrended(), list(bounds)
    j = 0
    while j + 1 < len(bounds):
        edges = [0, *bounds, len(y)]
        lo, k1, k2, hi = edges[j], bounds[j], bounds[j + 1], edges[j + 3]
        left, right = y[max(lo, k1 - tuning.window):k1], y[k2:min(hi, k2 + tuning.window)]
        inside = y[k1:k2]
        opposite = (median(inside) - median(left)) * (median(right) - median(inside)) < 0
        if k2 - k1 <= tuning.transient and opposite and _apart(left, right, s.sigma) < tuning.transient_z:
            del bounds[j:j + 2]
            j = max(j - 1, 0)
            continue
        j += 1
    return bounds


def _apart(left: np.ndarray, right: np.ndarray, sigma: float) -> float:
    # the Hodges-Lehmann shift between two sides in standard errors (as shift.evaluate reads one)
    delta = median(np.subtract.outer(right, left).ravel())
    return abs(delta) / (sigma * math.sqrt(math.pi / 3 * (1 / len(left) + 1 / len(right))))


def _gated(s: Series, bounds: list[int], alpha: float, tuning: Tuning) -> list[Boundary]:
    tests = [evaluate(s, window, alpha, tuning) for window in _windows(bounds, len(s.y))]
    return [Boundary(t, t.strength(alpha, tuning) >= 1.0) for t in tests]


def proposals(s: Series, tuning: Tuning) -> list[int]:
    """asv's L1 Potts solver (median-based) on the series, with a deliberately low jump cost
    (`penalty` noise scales): candidate boundaries, at least two points from either end."""
    n = len(s.y)
    right, _, _ = solve_potts_approx(s.detrended().tolist(), [1.0] * n, mu_dist=s.detrended_cost,
                                     gamma=tuning.penalty * s.sigma, min_size=2)
    return [r for r in right[:-1] if 2 <= r <= n - 2]


def keep(s: Series, bounds: list[int], alpha: float, tuning: Tuning) -> list[Test]:
    """Prune, then move the survivors to their best places (pruning may have kept a
    neighbour of the true boundary); again while anything moves."""
    tests: list[Test] = []
    for _ in range(4):
        tests = _prune(s, bounds, alpha, tuning)
        kept = [t.window[1] for t in tests]
        bounds = _relocate(s, kept, tuning.relocate)
        if bounds == kept:
            break
    return tests


def _relocate(s: Series, bounds: list[int], reach: int) -> list[int]:
    """Each boundary, left to right, moved within `reach` points to where the two segments
    it separates have the least L1 cost (asv's range medians); ties keep it in place."""
    bounds, cost_of = list(bounds), s.detrended_cost
    for j, k in enumerate(bounds):
        lo = bounds[j - 1] if j else 0
        hi = bounds[j + 1] if j + 1 < len(bounds) else len(s.y)
        options = [c for c in range(k - reach, k + reach + 1) if lo + 2 <= c <= hi - 2]
        cost = {c: cost_of.dist(lo, c - 1) + cost_of.dist(c, hi - 1) for c in options}
        bounds[j] = min(options, key=lambda c: (cost[c], c != k), default=k)
    return bounds


def _prune(s: Series, bounds: list[int], alpha: float, tuning: Tuning) -> list[Test]:
    """Backward elimination at the gates of `alpha` and `tuning`: the tests of those left."""
    test = functools.cache(lambda window: evaluate(s, window, alpha, tuning))
    return [test(w) for w in _eliminate(bounds, len(s.y), lambda w: test(w).strength(alpha, tuning))]
