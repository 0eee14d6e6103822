"""Change points in a benchmark's history: steps up or down, found robustly, alerted once.

`detect` looks at a whole history (one value per commit, optionally each commit's raw
samples) and returns its steps, each *decided* (the history alone is enough to alert on it)
or *weak* (found by the sensitive pass, short of the decided gates: shown, not alerted);
asked, also the step at its end that the history cannot decide yet (*suspected*: a
re-measurement decides it, `proofbench.analysis.confirm`). `proofbench.analysis.tracker.Tracker`
is the nightly view; it and the nightly check alert decided steps only.

How a step is found (`tools.detect_evaluation` measures how well; one boundary's tests are in
`proofbench.analysis.shift`, the segmentation in `proofbench.analysis.segmentation`):

1. Values are compared on a log scale (steps and noise are relative); failed or skipped
   commits (None/NaN) are left out and indexes stay those of the input. When any value is
   <= 0 the whole history is compared on a linear scale instead: each change says so
   (`log_scale` False), its `ratio` is NaN where a level is <= 0, and its size (for
   `min_step`) is the shift relative to the history's median absolute value.
2. Noise scale from successive differences (steps and slow drift move few of them): the
   larger of their MAD scale and their RMS clipped at 3 MAD scales, which sees the second
   mode of a bimodal machine while an outlier counts as no more than a 3-sigma point.
3. Strict boundaries: asv's L1 Potts solver (`asv.step_detect.solve_potts_approx`,
   median-based, so an outlier costs it little) proposes boundaries with a deliberately low
   jump cost; backward elimination tests each against its neighbouring segments (at most
   `window` points a side) and merges the weakest failing one away until all pass; survivors
   are then moved, within `relocate` points, to their least-cost place. A boundary passes when:
   each side has >= `min_side` points (so one or two outliers are never a step); the shift
   (Hodges-Lehmann) is >= `z_min` standard errors (read on Student's t, as the noise scale is
   estimated from the history itself); a Mann-Whitney U test (exact for small sides) gives
   p <= `alpha`, which refuses a burst of outliers or of a slow mode. Where the sides are too
   short for the rank test ever to reach `alpha` (5 against 8 points: at best 0.0016), it
   passes at its best p and the shift must be larger by the same factor.
4. The noise's shape (`proofbench.analysis.noise_model`): one mode, or two where the residuals
   of the strict segments show a machine that is sometimes slow.
5. Sensitive pass (`proofbench.analysis.scan`): each strict segment is searched for a step at
   `scan_alpha` (1.5%) by binary segmentation, the search over positions paid for in the
   p-value (ranks against random orderings; with two modes, each point's distance from its
   own mode); the boundaries found are tested again between their neighbours, where they need
   `weak_z` standard errors and a rank p of `weak_p` (two modes: a permutation p of the
   scores), and are moved to their best places. Where the residuals of the strict segments are
   serially correlated (lag-1, more than `serial_z` standard errors: a curved trend, seasons),
   no scan's null law holds and the pass is off.
6. Drift: the same again on the history less its slope (Theil-Sen within the strict
   segments, then within the segments that reading finds). The reading kept is the one of
   lower deviance under its noise model plus `step_cost` a boundary and `drift_cost` for the
   drift (a slope is one parameter, a step two: its place and its size); a drift's
   uncertainty is added to every shift read on it. Where the last `suspect_after` points
   reach more than half the pairs the slope is pooled from (Theil-Sen's breakdown: 29% of the
   points; a history of about 17 points or fewer), a young step among them could set the slope
   alone: there the slope must be evident before them too (`slope_t` standard errors, the same
   sign, half as steep), or no drift is read. A short excursion (at most `transient` points
   between opposite steps whose outer levels agree) is no step.
7. Each boundary of the reading kept is tested between its final neighbours at the strict
   gates of 3. Beside a side's slope of more than `line_t` standard errors, it must also fit
   its windows better than a straight line does. Passing, it is decided; else it is weak.
8. With samples, the rank test may also pool each side's samples; its z is divided by the
   design effect of pooling runs (deff = 1 + (k - 1) ICC, ICC estimated from the history)
   and read on Student's t with (runs - 2) degrees of freedom; the better of that and the
   values' test is taken, its p doubled for the choice.
9. A step is reported when its estimated size (the shift, as a relative change) is at least
   `min_step` (0 by default: every step; the nightly check passes its own floor, `MIN_STEP`
   unless the project file says otherwise); smaller ones still separate the segments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from proofbench.analysis import scan
from proofbench.analysis.noise_model import NoiseModel
from proofbench.analysis.segmentation import Boundary, settle
from proofbench.analysis.shift import DEFAULT, Series, Test, Tuning, evaluate, prepare, slope_shows_before

MIN_STEP = 0.03  # the nightly check's default floor: smaller steps are not alerted
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
    <= 0 and was compared on a linear scale. `weak`: found by the sensitive pass only, short
    of the gates that decide a step (see the module docstring): shown, never alerted.
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
    weak: bool = False

    @property
    def step(self) -> float | None:
        """`size` signed by the direction (+0.045: 4.5% up); None where it could not be estimated."""
        return self.direction * self.size if math.isfinite(self.size) else None

    @property
    def ratio(self) -> float:
        """after / before: 1.10 for a 10% rise; NaN where a level is <= 0 (a ratio across
        zero or of negative levels means nothing)."""
        return self.after / self.before if self.before > 0 and self.after > 0 else math.nan


def detect(values: Sequence[float | None], *,
           samples: Sequence[Sequence[float] | None] | None = None,
           higher_is_better: bool = False, min_step: float = 0.0, alpha: float = ALPHA,
           suspected: bool = False, held: Sequence[tuple[int, int]] = (),
           tuning: Tuning = DEFAULT) -> list[ChangePoint]:
    """The steps in one history, oldest first, decided and weak (`ChangePoint.weak`).

    `values`: one number per commit, in commit order; None or NaN for a failed or skipped
    commit. `samples`: optionally each commit's raw samples (None where a commit has none).
    `higher_is_better` decides which direction is a regression. `min_step`: steps whose
    estimated size is smaller are not reported. `alpha`: the rank test's significance level
    for a decided step.

    With `suspected`, the list also holds (last, `suspected` True) the step at the end that
    the history cannot decide yet, if there is one. The rule: among boundaries after the last
    decided step (or weak one with more than `suspect_after`, 5, points after it) with at most
    `suspect_after` valid points after them, the one whose shift has the most standard errors,
    when that shift is at least `z_suspect` (1.2) standard errors and half of `min_step`, and
    the boundary is not decided: it has fewer than `min_side` (3) points after it (no rank
    test decides on fewer), or its rank p lies between `alpha` and `p_suspect` (0.05), or its
    shift is under `z_min` (3.8) standard errors. Where the noise shows two modes (a machine
    that is sometimes slow), a place the rank test can judge must also show the step with the
    modes known, at `p_suspect`: the smaller of two permutation p-values, doubled, one of the
    points scored from their own modes and one of how often they fall in the higher mode, each
    in the step's direction (a few runs in the fast mode after some in the slow one rank as a
    step, and are none). The places that fail go, and the place is chosen again among the
    others of that direction: knowing the modes takes a suspect away or moves it, never makes
    one. It stays suspected until a re-measurement confirms or drops it, or the history
    decides it: `held` names the steps suspected before, (index, direction), and each that
    tonight's rule does not suspect again (more points after it, or tonight's suspect stands
    elsewhere) and no decided boundary reads is tested at its own place, between the decided
    boundaries around it. While its sides are too short for the
    rank test ever to reach `alpha` (4 points against 6: at best 0.0095), it is suspected again
    where that test passes the rule's other gates: a +93% step with one noisy point on either
    side was otherwise neither decided nor suspected with six points after it. Once they are
    long enough, the history has had its say.
    """
    s = prepare(values, samples)
    if s is None or len(s.y) < tuning.min_points:
        return []
    s, boundaries, noise = settle(s, alpha, tuning)
    changes = [_change(s, b.test, higher_is_better, weak=not b.decided)
               for b in boundaries if b.test.size(s.scale) >= min_step]
    if suspected:
        n = len(s.y)
        last = max((b.test.window[1] for b in boundaries
                    if b.decided or n - b.test.window[1] > tuning.suspect_after), default=0)
        suspect = _suspect(s, last, min_step, alpha, tuning, noise)
        changes += [_change(s, _earlier(s, last, suspect, tuning), higher_is_better, suspected=True)] \
            if suspect else []
        changes += [_change(s, t, higher_is_better, suspected=True)
                    for t in _held(s, held, boundaries, suspect, min_step, alpha, tuning, noise)]
    return changes


def _change(s: Series, t: Test, higher_is_better: bool, suspected: bool = False,
            weak: bool = False) -> ChangePoint:
    a, k, b = t.window
    direction = 1 if t.delta > 0 else -1
    return ChangePoint(int(s.positions[k]), direction, s.level(a, k), s.level(k, b), float(t.p),
                       float(abs(t.z)), direction == (-1 if higher_is_better else 1),
                       t.size(s.scale), suspected, b - k, s.log, weak)


def _suspect(s: Series, last: int, min_step: float, alpha: float, tuning: Tuning,
             noise: NoiseModel) -> Test | None:
    """The undecided step at the end of the history (the rule is in `detect`'s docstring)."""
    n = len(s.y)
    first = max(last + tuning.min_side, n - tuning.suspect_after)
    tests = [evaluate(s, (last, k, n), alpha, tuning) for k in range(first, n)]
    tests = [t for t in tests if abs(t.z) >= tuning.z_suspect and t.size(s.scale) >= tuning.suspect_size * min_step]
    best = _placed(s, last, tests, tuning)
    if best is None or noise.modes == 1:
        return best
    # On a machine that is sometimes slow, a few runs in the fast mode after some in the slow
    # one rank as a step: where the noise shows two modes, a place the rank test can judge must
    # also show the step with the modes known. The places that fail go before the place is
    # chosen again (one fast or slow run of the old level beside a step no longer moves it), in
    # the step's direction only: knowing the modes takes a suspect away or moves it, never
    # makes one.
    direction = 1 if best.delta > 0 else -1
    same = [t for t in tests if (t.delta > 0) == (direction > 0)]
    return _placed(s, last, [t for t in same if not _testable(t, tuning)
                             or _modes_p(s, t, noise, direction) <= tuning.p_suspect], tuning)


def _earlier(s: Series, last: int, t: Test, tuning: Tuning) -> Test:
    """A suspect at the first place the rule lets it stand (`min_side` points after the last
    boundary) may have started before it: there it goes to the place of least L1 cost from the
    boundary on, its test's figures kept (with every third commit measured, a fall after two
    points was put a point late, and the range it named left the commit that made it out)."""
    a, k, b = t.window
    if k != last + tuning.min_side:
        return t
    n = len(s.y)
    place = min(range(last + 1, k + 1), key=lambda j: (s.cost.dist(last, j - 1) + s.cost.dist(j, n - 1), -j))
    return t if place == k else replace(t, window=(a, place, b))


def _held(s: Series, held: Sequence[tuple[int, int]], boundaries: list[Boundary], suspect: Test | None,
          min_step: float, alpha: float, tuning: Tuning, noise: NoiseModel) -> list[Test]:
    """The steps suspected before that stay suspected (the rule is in `detect`'s docstring):
    not within `min_side` points of a decided boundary or of tonight's suspect (the same step,
    read a commit off, or one its test already covers), and while the rank test cannot decide them (its floor
    above `alpha`: measured again night after night, a step with no end to it would cost false
    alerts)."""
    n = len(s.y)
    decided = sorted(b.test.window[1] for b in boundaries if b.decided)
    near = decided + ([suspect.window[1]] if suspect is not None else [])
    kept: dict[int, Test] = {}
    for index, direction in held:
        k = int(np.searchsorted(s.positions, index))
        if k >= n or k in kept or any(abs(d - k) < tuning.min_side for d in near):
            continue
        a, b = max((d for d in decided if d < k), default=0), min((d for d in decided if d > k), default=n)
        if k - a < tuning.min_side:
            continue
        # a drift that does not show before the step may be the step itself (a short history)
        flat = s if not s.drift or slope_shows_before(s, decided, k, tuning) else replace(s, drift=0.0, drift_se=0.0)
        t = evaluate(flat, (a, k, b), alpha, tuning)
        if t.floor <= alpha or (t.delta > 0) != (direction > 0) \
                or abs(t.z) < tuning.z_suspect or t.size(s.scale) < tuning.suspect_size * min_step:
            continue
        if not _testable(t, tuning) or (t.p <= tuning.p_suspect and (
                noise.modes == 1 or _modes_p(flat, t, noise, direction) <= tuning.p_suspect)):
            kept[k] = t
    return list(kept.values())


def _placed(s: Series, last: int, tests: list[Test], tuning: Tuning) -> Test | None:
    """The suspect's place among `tests` (None: none), where the rank test lets it stand."""
    if not tests:
        return None
    n = len(s.y)
    best = max(tests, key=lambda t: abs(t.z))
    # The most standard errors is not the best place: a robust shift with one more point after
    # it (one still at the old level) has nearly the same size and more points. Among the
    # boundaries of the same direction, the one whose two segments cost least (L1, as
    # `segmentation.keep` places the others); the most standard errors breaks ties.
    same = [t for t in tests if (t.delta > 0) == (best.delta > 0)]
    best = min(same, key=lambda t: (s.cost.dist(last, t.window[1] - 1) + s.cost.dist(t.window[1], n - 1), -abs(t.z)))
    return best if not _testable(best, tuning) or best.p <= tuning.p_suspect else None


def _testable(t: Test, tuning: Tuning) -> bool:
    """Whether the rank test can say something of a suspect (enough points after it, a floor
    under p_suspect): where it can, it must."""
    return t.sides[1] >= tuning.min_side and t.floor <= tuning.p_suspect


def _modes_p(s: Series, t: Test, noise: NoiseModel, direction: int) -> float:
    """The permutation p of a step in `direction` at `t`'s place on a two-mode history, the
    smaller of two tests' doubled (one may pass where the other cannot): each point scored from
    its own mode (a shift), and how often the points fall in the higher mode (a step onto the
    other mode's level, or a benchmark that no longer takes its slow path)."""
    a, k, b = t.window
    y = s.detrended()[a:b]
    return min(1.0, 2 * min(scan.fixed_p(y, k - a, noise, direction), scan.share_p(y, k - a, noise, direction)))
