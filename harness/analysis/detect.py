"""Change points in a benchmark's history: steps up or down, found robustly, alerted once.

`detect` looks at a whole history (one value per commit, optionally each commit's raw
samples) and returns its steps; asked, also the step at its end that the history cannot
decide yet (*suspected*: a re-measurement decides it, `proofbench.analysis.confirm`).
`proofbench.analysis.tracker.Tracker` is the nightly view.

How a step is found (`tools.detect_evaluation` measures how well; the tests of one
boundary are in `proofbench.analysis.shift`):

1. Values are compared on a log scale (steps and noise are relative); failed or skipped
   commits (None/NaN) are left out and indexes stay those of the input. When any value is
   <= 0 the whole history is compared on a linear scale instead: each change says so
   (`log_scale` False), its `ratio` is NaN where a level is <= 0, and its size (for
   `min_step`) is the shift relative to the history's median absolute value.
2. Noise scale from successive differences (steps and slow drift move few of them): the
   larger of their MAD scale and their RMS clipped at 3 MAD scales, which sees the second
   mode of a bimodal machine while an outlier counts as no more than a 3-sigma point.
3. asv's L1 Potts solver (`asv.step_detect.solve_potts_approx`, median-based, so an
   outlier costs it little) proposes boundaries with a deliberately low jump cost.
4. Drift: the history's slope, Theil-Sen over pairs inside the proposed segments (never
   across a proposed boundary), is removed when it is more than `slope_t` standard errors,
   and the boundaries are proposed again on what is left; a slope fitted inside each side
   of a boundary (over twice its window) is removed likewise. Either adds its uncertainty
   to the shift's.
5. Backward elimination: each boundary is tested against its neighbouring segments (at
   most `window` points a side) and the weakest failing one is merged away until all pass;
   survivors are then moved, within `relocate` points, to their least-cost place. A
   boundary passes when: each side has >= `min_side` points (so one or two outliers are
   never a step); the shift (Hodges-Lehmann) is >= `z_min` standard errors (read on
   Student's t, as the noise scale is estimated from the history itself); a Mann-Whitney U
   test (exact for small sides) gives p <= `alpha`, which refuses a burst of outliers or of
   a slow mode. Where the sides are too short for the rank test ever to reach `alpha`
   (5 against 8 points: at best 0.0016), it passes at its best p and the shift must be
   larger by the same factor. Beside a side's slope of more than `line_t` standard
   errors, the step must also fit its windows better than a straight line does.
6. With samples, the rank test may also pool each side's samples; its z is divided by the
   design effect of pooling runs (deff = 1 + (k - 1) ICC, ICC estimated from the history)
   and read on Student's t with (runs - 2) degrees of freedom; the better of that and the
   values' test is taken, its p doubled for the choice.
7. A passing step is reported when its estimated size (the shift, as a relative change)
   is at least `min_step`; smaller ones still separate the segments the others are tested on.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from asv.step_detect import get_mu_dist, solve_potts_approx

from proofbench.analysis.shift import DEFAULT, Series, Test, Tuning, evaluate, prepare, with_drift

MIN_STEP = 0.03  # relative size of the step's estimate below which nothing is reported
ALPHA = 0.001  # significance level of the rank test


@dataclass(frozen=True)
class ChangePoint:
    """A step in a history.

    `index`: the first commit at the new level (an index into the input). `direction`: +1
    the value went up, -1 it went down. `before`, `after`: the levels (medians, input
    units) on either side. `p_value`: the two-sided rank test's. `score`: the shift in
    standard errors. `regression`: a change in the metric's bad direction (up for a time,
    down for a higher-is-better metric); improvements are reported with it False.
    `size`: the estimated relative size of the step (0.10 for 10%; see `detect`).
    `suspected`: the history cannot decide it yet (see `detect`); `points_after`: the valid
    points at the new level the test used. `log_scale`: False when the history had a value
    <= 0 and was compared on a linear scale.
    """

    index: int
    direction: int
    before: float
    after: float
    p_value: float
    score: float
    regression: bool
    size: float = math.nan
    suspected: bool = False
    points_after: int = 0
    log_scale: bool = True

    @property
    def ratio(self) -> float:
        """after / before: 1.10 for a 10% rise; NaN where a level is <= 0 (a ratio across
        zero or of negative levels means nothing)."""
        return self.after / self.before if self.before > 0 and self.after > 0 else math.nan


def detect(values: Sequence[float | None], *,
           samples: Sequence[Sequence[float] | None] | None = None,
           higher_is_better: bool = False, min_step: float = MIN_STEP, alpha: float = ALPHA,
           suspected: bool = False, tuning: Tuning = DEFAULT) -> list[ChangePoint]:
    """The steps in one history, oldest first.

    `values`: one number per commit, in commit order; None or NaN for a failed or skipped
    commit. `samples`: optionally each commit's raw samples (None where a commit has none).
    `higher_is_better` decides which direction is a regression. `min_step`: steps whose
    estimated size is smaller are not reported. `alpha`: the rank test's significance level.

    With `suspected`, the list also holds (last, `suspected` True) the step at the end that
    the history cannot decide yet, if there is one. The rule: among boundaries after the last
    decided step with at most `suspect_after` (5) valid points after them, the one whose
    shift has the most standard errors, when that shift is at least `z_suspect` (1.5)
    standard errors and half of `min_step`, and the boundary is not decided: it has fewer
    than `min_side` (3) points after it (no rank test decides on fewer), or its rank p lies
    between `alpha` and `p_suspect` (0.05), or its shift is under `z_min` (3.8) standard
    errors. It stays suspected until a re-measurement confirms or drops it, or the history
    decides it.
    """
    s = prepare(values, samples)
    if s is None or len(s.y) < tuning.min_points:
        return []
    s, tests = _settle(s, alpha, tuning)
    changes = [_change(s, t, higher_is_better) for t in tests if t.size(s.scale) >= min_step]
    if suspected:
        last = tests[-1].window[1] if tests else 0
        suspect = _suspect(s, last, min_step, alpha, tuning)
        changes += [_change(s, suspect, higher_is_better, True)] if suspect else []
    return changes


def _change(s: Series, t: Test, higher_is_better: bool, suspected: bool = False) -> ChangePoint:
    a, k, b = t.window
    direction = 1 if t.delta > 0 else -1
    return ChangePoint(int(s.positions[k]), direction, s.level(a, k), s.level(k, b), float(t.p),
                       float(abs(t.z)), direction == (-1 if higher_is_better else 1),
                       t.size(s.scale), suspected, b - k, s.log)


def _proposals(s: Series, tuning: Tuning) -> list[int]:
    n = len(s.y)
    y = s.detrended().tolist()
    cost = get_mu_dist(y, [1.0] * n) if s.drift else s.cost
    right, _, _ = solve_potts_approx(y, [1.0] * n, mu_dist=cost, gamma=tuning.penalty * s.sigma, min_size=2)
    return [r for r in right[:-1] if 2 <= r <= n - 2]


def _settle(s: Series, alpha: float, tuning: Tuning) -> tuple[Series, list[Test]]:
    """The tests of the boundaries kept, and the series they were made on: without the
    history's drift where one shows inside the proposed segments or, failing that, inside
    the segments kept (a staircase cut into a drift leaves few, long segments)."""
    bounds = _proposals(s, tuning)
    drifting = with_drift(s, bounds, tuning)
    if drifting.drift:
        return drifting, _keep(drifting, _proposals(drifting, tuning), alpha, tuning)
    tests = _keep(s, bounds, alpha, tuning)
    drifting = with_drift(s, [t.window[1] for t in tests], tuning)
    if drifting.drift:
        return drifting, _keep(drifting, _proposals(drifting, tuning), alpha, tuning)
    return s, tests


def _keep(s: Series, bounds: list[int], alpha: float, tuning: Tuning) -> list[Test]:
    """Prune, then move the survivors to their best places (pruning may have kept a
    neighbour of the true boundary); again while anything moves."""
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
    bounds = list(bounds)
    for j, k in enumerate(bounds):
        lo = bounds[j - 1] if j else 0
        hi = bounds[j + 1] if j + 1 < len(bounds) else len(s.y)
        options = [c for c in range(k - reach, k + reach + 1) if lo + 2 <= c <= hi - 2]
        cost = {c: s.cost.dist(lo, c - 1) + s.cost.dist(c, hi - 1) for c in options}
        best = min(options, key=lambda c: (cost[c], c != k), default=k)
        bounds[j] = best
    return bounds


def _prune(s: Series, bounds: list[int], alpha: float, tuning: Tuning) -> list[Test]:
    """Backward elimination: drop the weakest failing boundary, retest, until all pass."""
    bounds = sorted(bounds)
    cache: dict[tuple[int, int, int], Test] = {}
    while bounds:
        edges = [0, *bounds, len(s.y)]
        keys = [(edges[j], k, edges[j + 2]) for j, k in enumerate(bounds)]
        tests = [cache[key] if key in cache else cache.setdefault(key, evaluate(s, key, alpha, tuning))
                 for key in keys]
        strengths = [t.strength(alpha, tuning) for t in tests]
        worst = int(np.argmin(strengths))
        if strengths[worst] >= 1.0:
            return tests
        del bounds[worst]
    return []


def _suspect(s: Series, last: int, min_step: float, alpha: float, tuning: Tuning) -> Test | None:
    """The undecided step at the end of the history (the rule is in `detect`'s docstring)."""
    n = len(s.y)
    first = max(last + tuning.min_side, n - tuning.suspect_after)
    tests = [evaluate(s, (last, k, n), alpha, tuning) for k in range(first, n)]
    tests = [t for t in tests if abs(t.z) >= tuning.z_suspect and t.size(s.scale) >= tuning.suspect_size * min_step]
    if not tests:
        return None
    best = max(tests, key=lambda t: abs(t.z))
    # The most standard errors is not the best place: a robust shift with one more point after
    # it (one still at the old level) has nearly the same size and more points. Among the
    # boundaries of the same direction, the one whose two segments cost least (L1, as
    # `_relocate` places decided steps); the most standard errors breaks ties.
    same = [t for t in tests if (t.delta > 0) == (best.delta > 0)]
    best = min(same, key=lambda t: (s.cost.dist(last, t.window[1] - 1) + s.cost.dist(t.window[1], n - 1), -abs(t.z)))
    # Where the rank test can say something (enough points, a floor under p_suspect), it must.
    testable = best.sides[1] >= tuning.min_side and best.floor <= tuning.p_suspect
    return best if not testable or best.p <= tuning.p_suspect else None
