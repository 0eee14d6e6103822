"""One boundary of a history tested: the shift across it, its rank test, and drift around it.

`proofbench.analysis.detect` proposes boundaries and keeps those whose `Test` passes; this
module holds what a test computes (see detect's module docstring for how the gates combine).
"""
from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from asv.step_detect import get_mu_dist
from scipy.special import comb, ndtr, ndtri, stdtr

from proofbench.errors import InputError

MAD_SD = 1.4826  # the median absolute deviation times this estimates a normal's standard deviation


@dataclass(frozen=True)
class Tuning:
    """The detector's knobs (see detect's module docstring for where each acts).

    `penalty`: the Potts jump cost in noise scales. `window`: points a side a boundary is
    tested on. `z_min`: the shift in standard errors a change needs. `slope_t`: the t above
    which a side's slope is removed. `line_t`: the t of a side's slope
    above which a step must also fit better than a line, by `line_margin` (noise scales per
    sqrt(point)). `relocate`: how far a kept boundary may move. `min_points`: fewer valid
    points than this give no change points. `min_side`: points a side needs for a decided
    change. Suspected changes: at most `suspect_after` points after them, a shift of at least
    `z_suspect` standard errors and `suspect_size` times min_step, a rank p of at most
    `p_suspect` where the rank test can say anything (see `detect`).

    The sensitive pass (`proofbench.analysis.segmentation`): `scan_alpha`, the level of each
    segment's scan; `weak_z` and `weak_p`, the shift (standard errors) and rank p a weak step
    keeps between its final neighbours; `step_cost` and `drift_cost`, what a boundary and a
    drift add to a segmentation's deviance when one with a drift is weighed against one without;
    `transient`, the points at most of a short excursion (two opposite steps whose outer levels
    differ by under `transient_z` standard errors) that is no step; `serial_z`, the lag-1
    autocorrelation (standard errors) of the residuals in the segments the rank scan leaves above
    which the points are not exchangeable and the sensitive pass is off.
    """

    penalty: float = 3.0
    window: int = 40
    z_min: float = 3.8
    slope_t: float = 3.0
    line_t: float = 2.0
    line_margin: float = 0.5
    relocate: int = 5
    min_points: int = 5
    min_side: int = 3
    suspect_after: int = 5
    z_suspect: float = 1.2
    suspect_size: float = 0.5
    p_suspect: float = 0.05
    scan_alpha: float = 0.015
    weak_z: float = 2.5
    weak_p: float = 0.01
    step_cost: float = 10.0
    drift_cost: float = 5.0
    transient: int = 5
    transient_z: float = 3.0
    serial_z: float = 3.0


DEFAULT = Tuning()


@dataclass(frozen=True)
class Series:
    """The valid points of a history, ready for testing."""

    positions: np.ndarray  # original index of each valid point
    y: np.ndarray  # log values (raw values when some are <= 0)
    log: bool
    samples: tuple[np.ndarray, ...] | None  # per valid point, on y's scale
    sigma: float  # noise scale of y
    deff: float  # design effect of pooling a run's samples
    cost: object  # asv's RangeMedian: L1 cost of any segment of y
    drift: float = 0.0  # the history's slope per commit, removed before testing (0: none found)
    drift_se: float = 0.0

    def level(self, a: int, b: int) -> float:
        """The level of points [a, b) in the input's units."""
        m = median(self.y[a:b])
        return math.exp(m) if self.log else m

    @property
    def scale(self) -> float:
        """What a shift of y is relative to: 1 on the log scale, else the median |value|."""
        return 1.0 if self.log else median(np.abs(self.y))

    def detrended(self) -> np.ndarray:
        """y less the history's drift."""
        return self.y - self.drift * self.positions if self.drift else self.y

    @functools.cached_property
    def detrended_cost(self) -> object:
        """asv's RangeMedian over the detrended values (`cost` itself where there is no drift),
        built once a series."""
        return get_mu_dist(self.detrended().tolist(), [1.0] * len(self.y)) if self.drift else self.cost


def prepare(values: Sequence[float | None], samples: Sequence[Sequence[float] | None] | None) -> Series | None:
    """The valid points of `values` on a log scale (linear when any value is <= 0)."""
    if samples is not None and len(samples) != len(values):
        raise InputError(f"detect: samples has {len(samples)} entries, expected one per value "
                         f"({len(values)})")
    raw = np.array([math.nan if v is None else float(v) for v in values], dtype=float)
    keep = np.flatnonzero(np.isfinite(raw))
    if len(keep) < 2:
        return None
    log = bool(np.all(raw[keep] > 0))
    y = np.log(raw[keep]) if log else raw[keep]
    pooled, deff = None, 1.0
    if samples is not None:
        pooled = tuple(_run_samples(samples[i], y[j], log) for j, i in enumerate(keep))
        deff = _design_effect(pooled, y)
    cost = get_mu_dist(y.tolist(), [1.0] * len(y))
    return Series(keep, y, log, pooled, _noise_scale(y, log), deff, cost)


def _noise_scale(y: np.ndarray, log: bool) -> float:
    d = np.diff(y) / math.sqrt(2)
    mad = MAD_SD * median(np.abs(d))
    # Clipping at 3 sigma keeps 0.9973 of a normal's RMS.
    clipped = float(np.sqrt(np.mean(np.clip(d, -3 * mad, 3 * mad) ** 2))) / 0.9973
    # Floored at 0.01% of the level, so identical values do not make every wiggle a step.
    floor = 1e-4 if log else 1e-4 * median(np.abs(y))
    return max(mad, clipped, floor, 1e-12)


def _run_samples(raw: Sequence[float] | None, value: float, log: bool) -> np.ndarray:
    s = np.array([x for x in raw or () if x is not None], dtype=float)
    s = s[np.isfinite(s) & (s > 0)] if log else s[np.isfinite(s)]
    s = np.log(s) if log else s
    return s if len(s) else np.array([value])  # a run without samples counts as its value


def _design_effect(pooled: tuple[np.ndarray, ...], y: np.ndarray) -> float:
    """1 + (k - 1) ICC for pooling k samples a run. The ICC sets the within-run spread
    against the values' variance (a run's median has variance ~ pi/2 sw^2 / k), taken
    from successive differences less their largest 10% (steps, outliers), so that a
    minority mode counts in full and the effect errs large."""
    k = float(np.mean([len(s) for s in pooled]))
    runs = [s for s in pooled if len(s) >= 3]
    if not runs or k <= 1 or len(y) < 3:
        return max(k, 1.0)
    within2 = float(np.median(_run_mads(runs))) ** 2
    d2 = np.sort(np.diff(y) ** 2 / 2)[:max(1, int(0.9 * (len(y) - 1)))]
    total2 = float(d2.mean()) / 0.622  # a normal's variance less its top 10% is 0.622 of it
    between2 = max(0.0, total2 - math.pi / 2 * within2 / k)
    return 1.0 + (k - 1.0) * between2 / max(between2 + within2, 1e-300)


def _run_mads(runs: list[np.ndarray]) -> np.ndarray:
    # MAD_SD * MAD of every run at once: rows padded with NaN, which sorts last.
    counts = np.array([len(s) for s in runs])
    table = np.full((len(runs), counts.max()), np.nan)
    for r, s in enumerate(runs):
        table[r, :len(s)] = s
    centre = _row_medians(table, counts)
    return MAD_SD * _row_medians(np.abs(table - centre[:, None]), counts)


def _row_medians(table: np.ndarray, counts: np.ndarray) -> np.ndarray:
    t = np.sort(table, axis=1)
    rows = np.arange(len(t))
    return (t[rows, (counts - 1) // 2] + t[rows, counts // 2]) / 2


def with_slope(s: Series, bounds: list[int]) -> Series:
    """`s` with the history's slope as its drift: the Theil-Sen slope over pairs of points inside
    the same segment (never across a boundary of `bounds`), pooled over all segments, and its
    standard error. A drift cut into a staircase shows here, where no single stair's own slope
    would; whether the history drifts is decided by weighing the two readings
    (`proofbench.analysis.segmentation`)."""
    found = _pooled_slope(s, s.y, _spans(bounds, len(s.y)))
    return s if found is None else replace(s, drift=found[0], drift_se=found[1])


def slope_before(s: Series, bounds: list[int], stop: int) -> tuple[float, float] | None:
    """The slope `with_slope` finds over the first `stop` points of `s` alone, and its standard
    error (None: too few points)."""
    return _pooled_slope(s, s.y, _spans(bounds, stop))


def slope_shows_before(s: Series, bounds: list[int], stop: int, tuning: Tuning) -> bool:
    """Whether `s`'s drift shows in its first `stop` points alone: their slope (`slope_before`)
    evident (`slope_t` standard errors), of the drift's sign and at least half as steep. A young
    step among the later points could otherwise set the drift by itself."""
    found = slope_before(s, bounds, stop)
    if found is None:
        return False
    early, se = found
    return early * s.drift > 0 and abs(early) >= max(abs(s.drift) / 2, tuning.slope_t * se)


def share_after(bounds: list[int], n: int, stop: int) -> float:
    """The share of the pairs `with_slope` pools over `n` points that reach a point from `stop`
    on (0 where it pools none)."""
    def counted(spans: list[tuple[int, int]]) -> int:
        return sum(len(pairs(b - a)[0]) for a, b in spans if b - a >= 3)
    total = counted(_spans(bounds, n))
    return 1 - counted(_spans(bounds, stop)) / total if total else 0.0


def _spans(bounds: list[int], stop: int) -> list[tuple[int, int]]:
    # the segments of the first `stop` points that `bounds` cut them into
    edges = [0, *(b for b in bounds if b < stop), stop]
    return list(zip(edges, edges[1:]))


@dataclass(frozen=True)
class Test:
    """One boundary tested. `window`: (a, k, b), [a, k) against [k, b), k the first point
    at the new level. `delta`: the Hodges-Lehmann shift of y (detrended when drifting).
    `z`: delta in standard errors, as the normal deviate of Student's t on the history.
    `p`: the two-sided rank test's. `floor`: the smallest p that test can give for these
    sides. `line_excess`: how much worse a line fits [a, b) than the step (inf: not
    computed, or no slope evident beside the step)."""

    window: tuple[int, int, int]
    delta: float
    z: float
    p: float
    floor: float
    line_excess: float

    @property
    def sides(self) -> tuple[int, int]:
        """Points before and after k in the window."""
        a, k, b = self.window
        return k - a, b - k

    def strength(self, alpha: float, tuning: Tuning) -> float:
        """>= 1 when the boundary passes every gate. Where the rank test cannot reach
        `alpha` on these sides (its floor is higher), it passes at its floor and the shift
        must make up the difference: z_min is raised by the ratio of the two deviates."""
        if self.delta == 0 or self.p >= 1 or self.line_excess <= tuning.line_margin:
            return 0.0
        if min(self.sides) < tuning.min_side:
            return 0.0
        gate = max(alpha, self.floor)
        need = tuning.z_min * ndtri(alpha / 2) / ndtri(gate / 2)
        return min(abs(self.z) / need, ndtri(self.p / 2) / ndtri(gate / 2))

    def size(self, scale: float) -> float:
        """The step's relative size: |exp(delta) - 1| on the log scale, else |delta| / scale."""
        if scale == 1.0:  # a step beyond exp(709) overflows a float: it is infinitely large here
            return abs(math.expm1(self.delta)) if self.delta < math.log(sys.float_info.max) else math.inf
        return abs(self.delta) / scale if scale > 0 else math.inf


def evaluate(s: Series, segments: tuple[int, int, int], alpha: float, tuning: Tuning) -> Test:
    """Test the boundary at k between segments [lo, k) and [k, hi), windows capped."""
    lo, k, hi = segments
    a, b = max(lo, k - tuning.window), min(hi, k + tuning.window)
    if k - a < 1 or b - k < 1:
        return Test((a, k, b), 0.0, 0.0, 1.0, 1.0, 0.0)
    t = (s.positions[a:b] - s.positions[k]).astype(float)
    reach = 2 * tuning.window  # the slope may look further back and ahead than the test
    slope, slope_se = _within_slope(s, (max(lo, k - reach), k, min(hi, k + reach)))
    local = slope if abs(slope) > tuning.slope_t * slope_se else 0.0
    y = s.detrended()[a:b] - local * t
    delta = median(np.subtract.outer(y[k - a:], y[:k - a]).ravel())
    # The Hodges-Lehmann shift has variance ~ pi/3 sigma^2 (1/m + 1/n) on normal noise;
    # a slope removed adds its own uncertainty times the distance between the sides' centres.
    var = math.pi / 3 * s.sigma**2 * (1 / (k - a) + 1 / (b - k))
    gap = t[k - a:].mean() - t[:k - a].mean()
    var += (slope_se * gap) ** 2 if local else 0.0
    var += (s.drift_se * gap) ** 2
    # sigma is estimated from this history's n points: read the shift on Student's t with
    # n - 1 degrees of freedom, so a short history needs a larger shift.
    t_stat = abs(delta) / math.sqrt(var)
    z = math.copysign(-ndtri(stdtr(len(s.y) - 1, -t_stat)) if t_stat < 30 else t_stat, delta)
    p = rank_p(s, (a, k, b), local, delta)
    test = Test((a, k, b), delta, z, p, _floor(k - a, b - k, s.samples is not None), math.inf)
    if test.strength(alpha, tuning) < 1.0:
        return test  # the line comparison only decides among passing ones beside a slope
    # Beside a slope, the step must also fit better than a line. The slope is looked for
    # across the neighbouring boundaries too: a drift cut into a staircase shows there,
    # where a stair's own sides are too short to show it.
    wide, wide_se = _within_slope(s, (max(0, k - reach), k, min(len(s.y), k + reach)))
    if abs(slope) <= tuning.line_t * slope_se and abs(wide) <= tuning.line_t * wide_se:
        return test
    return replace(test, line_excess=_line_excess(s, (a, k, b)))


def _floor(m: int, n: int, doubled: bool) -> float:
    """The smallest two-sided p `rank_p` can give for sides of m and n points: all of one
    side above the other, 2 / C(m + n, m) on the exact path (doubled again with samples,
    where the better of two tests is taken); ~0 on the normal one."""
    if not (min(m, n) <= 8 and m * n <= 4000):
        return 0.0
    return min(1.0, (4.0 if doubled else 2.0) / comb(m + n, m))


def _line_excess(s: Series, window: tuple[int, int, int]) -> float:
    """Absolute residuals of the best line through [a, b) (Theil-Sen) less those of the
    step at k, in noise scales per sqrt(point): a drift fits a line at least as well."""
    a, k, b = window
    t, y = s.positions[a:b].astype(float), s.detrended()[a:b]
    i, j = pairs(b - a)
    line = y - median((y[j] - y[i]) / (t[j] - t[i])) * t
    line_res = np.abs(line - median(line)).sum()
    left, right = y[:k - a], y[k - a:]
    step_res = np.abs(left - median(left)).sum() + np.abs(right - median(right)).sum()
    return float(line_res - step_res) / s.sigma / math.sqrt(b - a)


def _within_slope(s: Series, segments: tuple[int, int, int]) -> tuple[float, float]:
    """Theil-Sen slope over pairs inside [lo, k) and inside [k, hi) of the detrended
    history, and its standard error."""
    lo, k, hi = segments
    found = _pooled_slope(s, s.detrended(), [(lo, k), (k, hi)])
    return (0.0, math.inf) if found is None else found


def _pooled_slope(s: Series, y: np.ndarray, spans: list[tuple[int, int]]) -> tuple[float, float] | None:
    """The Theil-Sen slope of `y` over pairs of points inside the same span (spans of at least 3
    points), pooled, and its standard error; None where no span has 3 points."""
    slopes, sxx = [], 0.0
    for a, b in spans:
        if b - a >= 3:
            i, j = pairs(b - a)
            t, part = s.positions[a:b].astype(float), y[a:b]
            slopes.append((part[j] - part[i]) / (t[j] - t[i]))
            sxx += float(((t - t.mean()) ** 2).sum())
    if not slopes or sxx <= 0:
        return None
    # Theil-Sen is ~95% as efficient as least squares on normal noise.
    return median(np.concatenate(slopes)), 1.05 * s.sigma / math.sqrt(sxx)


@functools.lru_cache(maxsize=256)
def pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs i < j of m points, at most 60 apart: linear cost, nearly the same estimate."""
    i, j = np.triu_indices(m, 1)
    keep = j - i <= 60
    return i[keep], j[keep]


def median(x: np.ndarray) -> float:
    """The median (np.median's checks cost more than the sort on the short arrays here)."""
    v = np.sort(x)
    return float(v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def rank_p(s: Series, window: tuple[int, int, int], slope: float, delta: float) -> float:
    """Two-sided Mann-Whitney p of the shift, in delta's direction, between [a, k) and
    [k, b) less the trend; with samples, also pooled (see detect's module docstring)."""
    a, k, b = window
    trend = slope * (s.positions[a:b] - s.positions[k]).astype(float)
    y = s.detrended()[a:b] - trend
    old, new = (y[:k - a], y[k - a:]) if delta > 0 else (y[k - a:], y[:k - a])
    p = min(1.0, 2.0 * _mwu_upper(new, old))
    if s.samples is None:
        return p
    drift = s.drift * s.positions[a:b]
    runs = [s.samples[i] - trend[i - a] - drift[i - a] for i in range(a, b)]
    old, new = np.concatenate(runs[:k - a]), np.concatenate(runs[k - a:])
    if delta < 0:
        old, new = new, old
    m, n = len(new), len(old)
    z = (_u_statistic(new, old) - m * n / 2) / math.sqrt(m * n * (m + n + 1) / 12 * s.deff)
    pooled = 2.0 * float(stdtr(max(b - a - 2, 1), -z))
    return min(1.0, 2.0 * min(p, pooled))


def _u_statistic(y: np.ndarray, x: np.ndarray) -> float:
    """Pairs (y_i, x_j) with y_i > x_j, ties counting one half."""
    xs = np.sort(x)
    below, upto = np.searchsorted(xs, y, side="left"), np.searchsorted(xs, y, side="right")
    return float(below.sum() + 0.5 * (upto - below).sum())


def _mwu_upper(y: np.ndarray, x: np.ndarray) -> float:
    """P(U >= u) for y larger than x under no shift: exact for small samples."""
    m, n = len(y), len(x)
    u = _u_statistic(y, x)
    if min(m, n) <= 8 and m * n <= 4000:
        return float(u_tail(m, n)[min(int(math.floor(u)), m * n)])
    return float(ndtr(-(u - 0.5 - m * n / 2) / math.sqrt(m * n * (m + n + 1) / 12)))


@functools.lru_cache(maxsize=1024)
def u_tail(m: int, n: int) -> np.ndarray:
    """tail[u] = P(U >= u) under no shift for sizes m and n, ties ignored: the counts are
    the coefficients of the Gaussian binomial prod_i (1 - q^(n+i)) / (1 - q^i)."""
    c = np.zeros(m * n + 1)
    c[0] = 1.0
    for i in range(1, m + 1):
        c[n + i:] -= c[:len(c) - n - i].copy()
        for start in range(i):  # divide by (1 - q^i): running sums with stride i
            c[start::i] = np.cumsum(c[start::i])
    return np.cumsum((c / c.sum())[::-1])[::-1]
