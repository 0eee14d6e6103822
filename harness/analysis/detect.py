"""Change points in a benchmark's history: steps up or down, found robustly, alerted once.

`detect` looks at a whole history (one value per commit, optionally each commit's raw
samples) and returns its steps. `Tracker` is the nightly view: fed one point a night, it
returns that night's new alerts and never moves or withdraws one.

How a step is found (`tools.detect_evaluation` measures how well):

1. Values are compared on a log scale (steps and noise are relative); failed or skipped
   commits (None/NaN) are left out and indexes stay those of the input.
2. Noise scale from successive differences (steps and slow drift move few of them): the
   larger of their MAD scale and their RMS clipped at 3 MAD scales, which sees the second
   mode of a bimodal machine while an outlier counts as no more than a 3-sigma point.
3. asv's L1 Potts solver (`asv.step_detect.solve_potts_approx`, median-based, so an
   outlier costs it little) proposes boundaries with a deliberately low jump cost.
4. Backward elimination: each boundary is tested against its neighbouring segments (at
   most `window` points a side) and the weakest failing one is merged away until all pass;
   survivors are then moved, within `relocate` points, to their least-cost place. A
   boundary passes when three things agree: the shift (Hodges-Lehmann) is >= `z_min`
   standard errors (read on Student's t, as the noise scale is estimated from the history
   itself, so a short history needs more); a Mann-Whitney U test (exact for small sides) gives p <= `p_max`, which
   is what refuses a burst of outliers or of a slow mode; and the step fits its windows
   better than a straight line does, which refuses a drift cut into a staircase. Each side
   needs >= 2 points, so a single outlier is never a step.
5. Drift: a slope fitted inside each side (Theil-Sen over pairs on one side, never across
   the step) is removed before testing when it is significant.
6. With samples, the rank test may also pool each side's samples; its z is divided by the
   design effect of pooling runs (deff = 1 + (k - 1) ICC, ICC estimated from the history)
   and read on Student's t with (runs - 2) degrees of freedom; the better of that and the
   values' test is taken, its p doubled for the choice.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from asv.step_detect import get_mu_dist, solve_potts_approx
from scipy.special import ndtr, ndtri, stdtr

from proofbench.errors import InputError


@dataclass(frozen=True)
class ChangePoint:
    """A step in a history.

    `index`: the first commit at the new level (an index into the input). `direction`: +1
    the value went up, -1 it went down. `before`, `after`: the levels (medians, input
    units) on either side. `p_value`: the two-sided rank test's. `score`: the shift in
    standard errors. `regression`: a change in the metric's bad direction (up for a time,
    down for a higher-is-better metric); improvements are reported with it False.
    """

    index: int
    direction: int
    before: float
    after: float
    p_value: float
    score: float
    regression: bool

    @property
    def ratio(self) -> float:
        """after / before: 1.10 for a 10% rise."""
        return self.after / self.before if self.before else math.inf


@dataclass(frozen=True)
class Tuning:
    """The detector's knobs (see the module docstring for where each acts). `penalty`: the
    Potts jump cost in noise scales; `slope_t`: the t above which a side's slope is removed;
    `line_margin`: how much better than a line (in noise scales per sqrt(point)) a step
    must fit; `min_points`: fewer valid points than this give no change points."""

    penalty: float = 3.0
    window: int = 40
    z_min: float = 3.8
    p_max: float = 0.001
    slope_t: float = 3.0
    line_margin: float = 0.5
    relocate: int = 5
    min_points: int = 5


DEFAULT = Tuning()


@dataclass(frozen=True)
class _Series:
    """The valid points of a history, ready for testing."""

    positions: np.ndarray  # original index of each valid point
    y: np.ndarray  # log values (raw values when some are <= 0)
    log: bool
    samples: tuple[np.ndarray, ...] | None  # per valid point, on y's scale
    sigma: float  # noise scale of y
    deff: float  # design effect of pooling a run's samples
    cost: object  # asv's RangeMedian: L1 cost of any segment of y

    def level(self, a: int, b: int) -> float:
        """The level of points [a, b) in the input's units."""
        m = _median(self.y[a:b])
        return math.exp(m) if self.log else m


@dataclass(frozen=True)
class _Test:
    window: tuple[int, int, int]  # (a, k, b): [a, k) against [k, b); k starts the new level
    delta: float  # Hodges-Lehmann shift of y, detrended when drifting
    z: float  # delta in standard errors, as the normal deviate of Student's t on the history
    p: float
    line_excess: float  # how much worse a line fits [a, b) than the step (inf: not computed)

    def strength(self, tuning: Tuning) -> float:
        """>= 1 when the boundary passes every gate."""
        if self.delta == 0 or self.p >= 1 or self.line_excess <= tuning.line_margin:
            return 0.0
        return min(abs(self.z) / tuning.z_min, ndtri(self.p / 2) / ndtri(tuning.p_max / 2))


def detect(values: Sequence[float | None], *,
           samples: Sequence[Sequence[float] | None] | None = None,
           higher_is_better: bool = False, tuning: Tuning = DEFAULT) -> list[ChangePoint]:
    """The steps in one history, oldest first.

    `values`: one number per commit, in commit order; None or NaN for a failed or skipped
    commit. `samples`: optionally each commit's raw samples (None where a commit has none).
    `higher_is_better` decides which direction is a regression.
    """
    s = _prepare(values, samples)
    if s is None or len(s.y) < tuning.min_points:
        return []
    changes = []
    for t in _settle(s, _candidates(s, tuning), tuning):
        a, k, b = t.window
        direction = 1 if t.delta > 0 else -1
        changes.append(ChangePoint(int(s.positions[k]), direction, s.level(a, k), s.level(k, b),
                                   float(t.p), float(abs(t.z)),
                                   direction == (-1 if higher_is_better else 1)))
    return changes


def _prepare(values: Sequence[float | None],
             samples: Sequence[Sequence[float] | None] | None) -> _Series | None:
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
    return _Series(keep, y, log, pooled, _noise_scale(y, log), deff, cost)


def _noise_scale(y: np.ndarray, log: bool) -> float:
    d = np.diff(y) / math.sqrt(2)
    mad = 1.4826 * _median(np.abs(d))
    # Clipping at 3 sigma keeps 0.9973 of a normal's RMS.
    clipped = float(np.sqrt(np.mean(np.clip(d, -3 * mad, 3 * mad) ** 2))) / 0.9973
    # Floored at 0.01% of the level, so identical values do not make every wiggle a step.
    floor = 1e-4 if log else 1e-4 * _median(np.abs(y))
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
    # 1.4826 * MAD of every run at once: rows padded with NaN, which sorts last.
    counts = np.array([len(s) for s in runs])
    table = np.full((len(runs), counts.max()), np.nan)
    for r, s in enumerate(runs):
        table[r, :len(s)] = s
    centre = _row_medians(table, counts)
    return 1.4826 * _row_medians(np.abs(table - centre[:, None]), counts)


def _row_medians(table: np.ndarray, counts: np.ndarray) -> np.ndarray:
    t = np.sort(table, axis=1)
    rows = np.arange(len(t))
    return (t[rows, (counts - 1) // 2] + t[rows, counts // 2]) / 2


def _candidates(s: _Series, tuning: Tuning) -> list[int]:
    n = len(s.y)
    right, _, _ = solve_potts_approx(s.y.tolist(), [1.0] * n, mu_dist=s.cost,
                                     gamma=tuning.penalty * s.sigma, min_size=2)
    return [r for r in right[:-1] if 2 <= r <= n - 2]


def _settle(s: _Series, bounds: list[int], tuning: Tuning) -> list[_Test]:
    """Prune, then move the survivors to their best places (pruning may have kept a
    neighbour of the true boundary); again while anything moves."""
    for _ in range(4):
        tests = _prune(s, bounds, tuning)
        kept = [t.window[1] for t in tests]
        bounds = _relocate(s, kept, tuning.relocate)
        if bounds == kept:
            break
    return tests


def _relocate(s: _Series, bounds: list[int], reach: int) -> list[int]:
    """Each boundary, left to right, moved within `reach` points to where the two segments
    it separates have the least L1 cost (asv's range medians); ties keep it in place."""
    bounds = list(bounds)
    for j, k in enumerate(bounds):
        lo = bounds[j - 1] if j else 0
        hi = bounds[j + 1] if j + 1 < len(bounds) else len(s.y)
        options = [c for c in range(k - reach, k + reach + 1) if lo + 2 <= c <= hi - 2]
        cost = {c: s.cost.dist(lo, c - 1) + s.cost.dist(c, hi - 1) for c in options}
        best = min(options, key=lambda c: (cost[c], c != k), default=k)
        bounds[j] = best
    return bounds


def _prune(s: _Series, bounds: list[int], tuning: Tuning) -> list[_Test]:
    """Backward elimination: drop the weakest failing boundary, retest, until all pass."""
    bounds = sorted(bounds)
    cache: dict[tuple[int, int, int], _Test] = {}
    while bounds:
        edges = [0, *bounds, len(s.y)]
        keys = [(edges[j], k, edges[j + 2]) for j, k in enumerate(bounds)]
        tests = [cache[key] if key in cache else cache.setdefault(key, _evaluate(s, key, tuning))
                 for key in keys]
        strengths = [t.strength(tuning) for t in tests]
        worst = int(np.argmin(strengths))
        if strengths[worst] >= 1.0:
            return tests
        del bounds[worst]
    return []


def _evaluate(s: _Series, segments: tuple[int, int, int], tuning: Tuning) -> _Test:
    """Test the boundary at k between segments [lo, k) and [k, hi), windows capped."""
    lo, k, hi = segments
    a, b = max(lo, k - tuning.window), min(hi, k + tuning.window)
    if k - a < 2 or b - k < 2:
        return _Test((a, k, b), 0.0, 0.0, 1.0, 0.0)
    t = (s.positions[a:b] - s.positions[k]).astype(float)
    reach = 2 * tuning.window  # the slope may look further back and ahead than the test
    slope, slope_se = _within_slope(s, (max(lo, k - reach), k, min(hi, k + reach)))
    slope = slope if abs(slope) > tuning.slope_t * slope_se else 0.0
    y = s.y[a:b] - slope * t
    delta = _median(np.subtract.outer(y[k - a:], y[:k - a]).ravel())
    # The Hodges-Lehmann shift has variance ~ pi/3 sigma^2 (1/m + 1/n) on normal noise.
    var = math.pi / 3 * s.sigma**2 * (1 / (k - a) + 1 / (b - k))
    if slope:
        var += (slope_se * (t[k - a:].mean() - t[:k - a].mean())) ** 2
    # sigma is estimated from this history's n points: read the shift on Student's t with
    # n - 1 degrees of freedom, so a short history needs a larger shift.
    t_stat = abs(delta) / math.sqrt(var)
    z = math.copysign(-ndtri(stdtr(len(s.y) - 1, -t_stat)) if t_stat < 30 else t_stat, delta)
    test = _Test((a, k, b), delta, z, _rank_p(s, (a, k, b), slope, delta), math.inf)
    if test.strength(tuning) < 1.0:  # the line comparison only decides among passing ones
        return test
    return replace(test, line_excess=_line_excess(s, (a, k, b)))


def _line_excess(s: _Series, window: tuple[int, int, int]) -> float:
    """Absolute residuals of the best line through [a, b) (Theil-Sen) less those of the
    step at k, in noise scales per sqrt(point): a drift fits a line at least as well."""
    a, k, b = window
    t, y = s.positions[a:b].astype(float), s.y[a:b]
    i, j = _pairs(b - a)
    line = y - _median((y[j] - y[i]) / (t[j] - t[i])) * t
    line_res = np.abs(line - _median(line)).sum()
    left, right = y[:k - a], y[k - a:]
    step_res = np.abs(left - _median(left)).sum() + np.abs(right - _median(right)).sum()
    return float(line_res - step_res) / s.sigma / math.sqrt(b - a)


def _within_slope(s: _Series, segments: tuple[int, int, int]) -> tuple[float, float]:
    """Theil-Sen slope over pairs inside [lo, k) and inside [k, hi), and its standard error."""
    lo, k, hi = segments
    slopes, sxx = [], 0.0
    for a, b in ((lo, k), (k, hi)):
        if b - a >= 3:
            i, j = _pairs(b - a)
            t, y = s.positions[a:b].astype(float), s.y[a:b]
            slopes.append((y[j] - y[i]) / (t[j] - t[i]))
            sxx += float(((t - t.mean()) ** 2).sum())
    if not slopes:
        return 0.0, math.inf
    # Theil-Sen is ~95% as efficient as least squares on normal noise.
    return _median(np.concatenate(slopes)), 1.05 * s.sigma / math.sqrt(sxx)


@functools.lru_cache(maxsize=256)
def _pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    # Pairs i < j of m points, at most 60 apart: linear cost, nearly the same estimate.
    i, j = np.triu_indices(m, 1)
    keep = j - i <= 60
    return i[keep], j[keep]


def _median(x: np.ndarray) -> float:
    # np.median's checks cost more than the sort on the short arrays used here.
    v = np.sort(x)
    return float(v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def _rank_p(s: _Series, window: tuple[int, int, int], slope: float, delta: float) -> float:
    """Two-sided Mann-Whitney p of the shift, in delta's direction, between [a, k) and
    [k, b) less the trend; with samples, also pooled (see the module docstring, item 6)."""
    a, k, b = window
    trend = slope * (s.positions[a:b] - s.positions[k]).astype(float)
    y = s.y[a:b] - trend
    old, new = (y[:k - a], y[k - a:]) if delta > 0 else (y[k - a:], y[:k - a])
    p = min(1.0, 2.0 * _mwu_upper(new, old))
    if s.samples is None:
        return p
    runs = [s.samples[i] - trend[i - a] for i in range(a, b)]
    old, new = np.concatenate(runs[:k - a]), np.concatenate(runs[k - a:])
    if delta < 0:
        old, new = new, old
    m, n = len(new), len(old)
    z = (_u_statistic(new, old) - m * n / 2) / math.sqrt(m * n * (m + n + 1) / 12 * s.deff)
    pooled = 2.0 * float(stdtr(b - a - 2, -z))
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
        return float(_u_tail(m, n)[min(int(math.floor(u)), m * n)])
    return float(ndtr(-(u - 0.5 - m * n / 2) / math.sqrt(m * n * (m + n + 1) / 12)))


@functools.lru_cache(maxsize=1024)
def _u_tail(m: int, n: int) -> np.ndarray:
    """tail[u] = P(U >= u) under no shift for sizes m and n, ties ignored: the counts are
    the coefficients of the Gaussian binomial prod_i (1 - q^(n+i)) / (1 - q^i)."""
    c = np.zeros(m * n + 1)
    c[0] = 1.0
    for i in range(1, m + 1):
        c[n + i:] -= c[:len(c) - n - i].copy()
        for start in range(i):  # divide by (1 - q^i): running sums with stride i
            c[start::i] = np.cumsum(c[start::i])
    return np.cumsum((c / c.sum())[::-1])[::-1]


class Tracker:
    """The nightly view of one benchmark: fed one point a night, it returns that night's
    new alerts.

    Each night it runs `detect` over the last `horizon` points. A change point is alerted
    once `detect` has reported it (same direction, within `radius` commits) on `confirm`
    nights in a row. An alert keeps its index and is never withdrawn; a later report of
    the same step (same direction within `radius` of an alert) raises nothing.

    A nightly job is a fresh process: pass the stored `history` (and `samples`) and the
    `alerts` raised before; tonight's `add` then alerts only what is new. Without `alerts`,
    the first `add` alerts every step already in the history.
    """

    def __init__(self, *, higher_is_better: bool = False, history: Sequence[float | None] = (),
                 samples: Sequence[Sequence[float] | None] | None = None,
                 alerts: Sequence[ChangePoint] = (), confirm: int = 1, horizon: int = 120,
                 radius: int = 4, tuning: Tuning = DEFAULT) -> None:
        if samples is not None and len(samples) != len(history):
            raise InputError(f"Tracker: samples has {len(samples)} entries, expected one per "
                             f"history value ({len(history)})")
        self.higher_is_better = higher_is_better
        self.confirm, self.horizon, self.radius, self.tuning = confirm, horizon, radius, tuning
        self._values = list(history)
        self._samples = list(samples) if samples is not None else [None] * len(self._values)
        self._alerts = list(alerts)
        # Reports of the night before, with how many nights in a row each has been seen.
        self._streaks = [(cp, 1) for cp in self._found()] if self._values else []

    @property
    def alerts(self) -> tuple[ChangePoint, ...]:
        """Every alert raised so far (those given at construction first), in order."""
        return tuple(self._alerts)

    def add(self, value: float | None, samples: Sequence[float] | None = None) -> list[ChangePoint]:
        """Record tonight's value (None/NaN for a failed run) and return the new alerts."""
        self._values.append(value)
        self._samples.append(samples)
        streaks, new = [], []
        for cp in self._found():
            streak = 1 + max((n for old, n in self._streaks if self._same(old, cp)), default=0)
            streaks.append((cp, streak))
            if streak >= self.confirm and not any(self._same(a, cp) for a in self._alerts):
                self._alerts.append(cp)
                new.append(cp)
        self._streaks = streaks
        return new

    def _found(self) -> list[ChangePoint]:
        start = max(0, len(self._values) - self.horizon)
        samples = self._samples[start:]
        found = detect(self._values[start:],
                       samples=samples if any(s is not None for s in samples) else None,
                       higher_is_better=self.higher_is_better, tuning=self.tuning)
        return [replace(c, index=c.index + start) for c in found]

    def _same(self, a: ChangePoint, b: ChangePoint) -> bool:
        return a.direction == b.direction and abs(a.index - b.index) <= self.radius
