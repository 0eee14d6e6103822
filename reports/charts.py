"""Charts as plain data for the SVG template: scales, ticks in units, lines, change markers.

Geometry is computed here (numbers only); reports/templates/_charts.html draws it, so every
piece of text (titles, legends, commit subjects) goes through Jinja's autoescape. Axes carry
their unit in the label ("time per call (ms)") and tick labels are numbers in that unit, so a
chart reads without hovering. A quantity whose values span more than `LOG_SPAN` times is drawn
on a log scale, and the axis label says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

LOG_SPAN = 8.0
DRAWABLE = (1e-300, 1e300)  # magnitudes an axis can hold (ticks are powers of ten); others are marked off scale
MAX_DECADES = 8  # log-axis ticks at most this many decades apart in count
WIDTH, HEIGHT = 560, 270
LEFT, RIGHT, TOP, BOTTOM = 66, 16, 30, 44
CHAR_PX = 6.4  # average width of a 11px sans-serif character, for laying out legends
TITLE_CHAR_PX = 7.4  # the same of a title's (12.5px, semibold), so a legend is kept off it
ROW = 14  # height of a legend row under the title; the plot moves down by as much
RULE_LABEL_PX = 11  # a rule's label height: closer labels are moved apart

_SCALES = {
    "seconds": ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")),
    "bytes": ((2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "B")),
    "rate": ((1e9, "G "), (1e6, "M "), (1e3, "k "), (1.0, "")),
    "factor": ((1.0, "×"),),
}


@dataclass(frozen=True)
class Quantity:
    """What a chart's values are: `kind` (seconds, bytes, rate, factor) and the axis wording.

    `label` holds `{unit}` where the chosen unit goes: "time per call ({unit})".
    """

    kind: str
    label: str

    def unit(self, largest: float) -> tuple[float, str]:
        """The (divisor, unit) that keeps the largest value's label at 1 or more."""
        scales = _SCALES[self.kind]
        return next(((d, u) for d, u in scales if abs(largest) >= d), scales[-1])


@dataclass(frozen=True)
class Tick:
    """A labelled position on an axis."""

    at: float  # pixels along the axis
    label: str


@dataclass(frozen=True)
class Line:
    """One plotted series: polyline point lists (split where a run failed), lone points, and
    where its plot has tips, each valid point with its tooltip text."""

    label: str
    css: str
    paths: tuple[str, ...]
    dots: tuple[tuple[float, float], ...]
    tips: tuple[tuple[float, float, str], ...] = ()
    dashed: bool = False


@dataclass(frozen=True)
class Marker:
    """A numbered vertical mark at a change point; the list under the chart explains it."""

    x: float
    number: int
    css: str  # regression | improvement | weak
    title: str  # the commit and its subject line, as a tooltip too


@dataclass(frozen=True)
class Rule:
    """A horizontal reference line (1× speedup, a claim's promised figure); its label sits at
    `label_y`, above the line unless another label is there."""

    y: float
    label: str
    css: str
    label_y: float


@dataclass(frozen=True)
class LegendEntry:
    """A swatch and label above the plot: beside the title or in a row under it (`y`: its top)."""

    x: float
    y: float
    label: str
    css: str
    dashed: bool = False


@dataclass(frozen=True)
class Chart:
    """A line chart over commits, ready for the template."""

    id: str
    title: str
    y_label: str
    x_label: str
    log: bool
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    lines: tuple[Line, ...]
    markers: tuple[Marker, ...] = ()
    rules: tuple[Rule, ...] = ()
    failures: tuple[float, ...] = ()
    off_scale: tuple[float, ...] = ()  # x of values too large or too small to draw (the tables show them)
    legend: tuple[LegendEntry, ...] = ()
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    right: int = WIDTH - RIGHT
    bottom: int = HEIGHT - BOTTOM


@dataclass(frozen=True)
class Plot:
    """Input of one line: label, CSS class, commit ranks and values (NaN: none there), and
    optionally a tooltip text per point.

    A commit whose value is NaN is marked as failed, unless `failed` is given: then only those
    where it is true are (a NaN elsewhere only breaks the line: another plot shows that commit).
    """

    label: str
    css: str
    ranks: Sequence[int]
    values: Sequence[float]
    tips: Sequence[str] = ()
    failed: Sequence[bool] | None = None
    dashed: bool = False


class _Scale:
    """Maps values to pixels, linearly or on a log scale, over a padded domain."""

    def __init__(self, lo: float, hi: float, px0: float, px1: float, log: bool) -> None:
        self.log, self.px0, self.px1 = log, px0, px1
        f = math.log10 if log else float
        self.lo, self.hi = f(lo), f(hi)
        if self.hi == self.lo:
            self.lo, self.hi = self.lo - 0.5, self.hi + 0.5

    def __call__(self, values: np.ndarray) -> np.ndarray:
        v = np.log10(values) if self.log else values
        return self.px0 + (v - self.lo) / (self.hi - self.lo) * (self.px1 - self.px0)


def _nice_step(span: float, count: int = 5) -> float:
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)


def _linear_ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    pad = (hi - lo) * 0.04 or abs(lo) * 0.1 or 1.0  # headroom, so no line or label sits on the frame
    lo, hi = (lo - pad if lo != 0 else lo), hi + pad
    step = _nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    return lo, hi, [lo + i * step for i in range(int(round((hi - lo) / step)) + 1)]


def _log_ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    lo, hi = lo / 1.15, hi * 1.15
    mantissas = (1, 2, 5) if hi / lo < 1e3 else (1,)
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = range(first, last + 1, max(1, math.ceil((last - first) / MAX_DECADES)))
    ticks = [m * 10.0**d for d in decades for m in mantissas if lo <= m * 10.0**d <= hi]
    return lo, hi, ticks


def drawable(value: float) -> bool:
    """True for a finite value whose magnitude an axis can hold (zero included)."""
    return math.isfinite(value) and (value == 0 or DRAWABLE[0] <= abs(value) <= DRAWABLE[1])


def _label(value: float) -> str:
    return f"{value:.4g}"


def value_axis(quantity: Quantity, values: Sequence[float], px0: float, px1: float,
               zero: bool = False) -> tuple[_Scale, list[Tick], str]:
    """The scale, ticks and label of a value axis fitted to `values` (all finite); `scale.log`
    tells whether it is a log scale."""
    lo, hi = min(values), max(values)
    if zero:
        lo = min(lo, 0.0)
    log = lo > 0 and hi / lo > LOG_SPAN and quantity.kind != "factor"
    divisor, unit = quantity.unit(hi)
    # ticks are chosen in the unit shown, so they read 40, 50, 60 MiB rather than 38.15, 47.68
    lo_d, hi_d, ticks = (_log_ticks if log else _linear_ticks)(lo / divisor, hi / divisor)
    scale = _Scale(lo_d * divisor, hi_d * divisor, px0, px1, log)
    marks = [Tick(float(scale(np.array(t * divisor))), _label(t)) for t in ticks]
    return scale, marks, quantity.label.replace("{unit}", unit)


def _paths(xs: np.ndarray, ys: np.ndarray, valid: np.ndarray) -> tuple[tuple[str, ...], tuple]:
    """Polyline point lists for each run of valid points; a run of one is a lone dot."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], valid.astype(np.int8), [0]))))
    paths, dots = [], []
    for start, stop in zip(edges[::2], edges[1::2]):
        if stop - start == 1:
            dots.append((round(float(xs[start]), 1), round(float(ys[start]), 1)))
        else:
            pairs = np.column_stack((xs[start:stop], ys[start:stop])).ravel().tolist()
            paths.append(" ".join(["%.1f,%.1f"] * (stop - start)) % tuple(pairs))
    return tuple(paths), tuple(dots)


def _legend(plots: list[Plot], title: str) -> tuple[tuple[LegendEntry, ...], int]:
    """The legend, right of the title where it fits, else in rows under it; and how many rows
    under the title it takes."""
    widths = [16 + CHAR_PX * len(p.label) for p in plots]
    right = WIDTH - RIGHT
    beside = right - (sum(widths) + 10 * (len(widths) - 1))
    x, row = (beside, 0) if beside >= 4 + TITLE_CHAR_PX * len(title) + 12 else (4.0, 1)
    out = []
    for p, width in zip(plots, widths):
        if row and x > 4 and x + width > right:
            x, row = 4.0, row + 1
        out.append(LegendEntry(round(x, 1), 8 + ROW * row, p.label, p.css, p.dashed))
        x += width + 10
    return tuple(out), row


def _rules(rules: Sequence[tuple[float, str, str]], y: _Scale) -> tuple[Rule, ...]:
    """Rules in pixels, top first; a label that would overlap the one above it moves down."""
    placed = sorted((float(y(np.array(v))), label, css) for v, label, css in rules)
    out: list[Rule] = []
    for at, label, css in placed:
        label_y = at - 4 if not out else max(at - 4, out[-1].label_y + RULE_LABEL_PX)
        out.append(Rule(round(at, 1), label, css, round(label_y, 1)))
    return tuple(out)


def line_chart(chart_id: str, title: str, quantity: Quantity, plots: list[Plot], x_ticks: list[tuple[int, str]],
               x_label: str, markers: Sequence[tuple[int, int, str, str]] = (),
               rules: Sequence[tuple[float, str, str]] = ()) -> Chart | None:
    """A chart of `plots` over commit ranks; None when no plot has a value to show."""
    arrays = [np.asarray(p.values, dtype=float) for p in plots]
    fits = [np.vectorize(drawable, otypes=[bool])(a) if len(a) else np.zeros(0, bool) for a in arrays]
    finite = [float(v) for a in (a[f] for a, f in zip(arrays, fits)) if len(a) for v in (a.min(), a.max())]
    if not finite:
        return None
    rules = [rule for rule in rules if drawable(rule[0])]
    ranks = [r for p in plots for r in p.ranks]
    r0, r1 = min(ranks), max(ranks)
    if r0 == r1:
        r0, r1 = r0 - 1, r1 + 1
    x = _Scale(r0, r1, LEFT, WIDTH - RIGHT, False)
    shown = finite + [v for v, _, _ in rules]
    y, y_ticks, y_label = value_axis(quantity, shown, HEIGHT - BOTTOM, TOP, zero=quantity.kind == "factor")
    legend, rows = _legend(plots, title + (" (log scale)" if y.log else ""))
    top = TOP + ROW * rows
    if rows:  # the plot starts under the legend's rows
        y, y_ticks, y_label = value_axis(quantity, shown, HEIGHT - BOTTOM, top, zero=quantity.kind == "factor")
    lines, failures, off_scale = [], [], []
    for p, vals, fit in zip(plots, arrays, fits):
        valid = fit & ((vals > 0) if y.log else True)
        failed = np.isnan(vals) if p.failed is None else np.asarray(p.failed, dtype=bool)
        xs = x(np.asarray(p.ranks, dtype=float))
        ys = y(np.where(valid, vals, 1.0))
        tips = tuple((round(float(a), 1), round(float(b), 1), t) for a, b, t, ok in zip(xs, ys, p.tips, valid) if ok)
        lines.append(Line(p.label, p.css, *_paths(xs, ys, valid), tips, p.dashed))
        failures.extend(round(float(xx), 1) for xx, f in zip(xs, failed) if f)
        off_scale.extend(round(float(xx), 1) for xx, v, ok in zip(xs, vals, valid) if not ok and not np.isnan(v))
    return Chart(
        id=chart_id, title=title, y_label=y_label, x_label=x_label, log=y.log,
        x_ticks=tuple(Tick(round(float(x(np.array(float(r)))), 1), label) for r, label in x_ticks),
        y_ticks=tuple(Tick(round(t.at, 1), t.label) for t in y_ticks),
        lines=tuple(lines),
        markers=tuple(Marker(round(float(x(np.array(float(r)))), 1), n, css, title)
                      for r, n, css, title in markers),
        rules=_rules(rules, y),
        failures=tuple(sorted(set(failures))),
        off_scale=tuple(sorted(set(off_scale) - set(failures))),
        legend=legend, top=top)


@dataclass(frozen=True)
class StripRow:
    """One variant's raw samples: dot positions, the IQR box and the median mark (pixels)."""

    label: str
    css: str
    y: float
    dots: tuple[float, ...]
    q1: float
    median: float
    q3: float


@dataclass(frozen=True)
class Strip:
    """The raw-sample spread of one run: one row of dots per variant on a shared time axis."""

    id: str
    title: str
    x_label: str
    log: bool
    ticks: tuple[Tick, ...]
    rows: tuple[StripRow, ...]
    width: int = WIDTH
    height: int = 0
    left: int = 110
    right: int = WIDTH - RIGHT


def strip_chart(chart_id: str, title: str, quantity: Quantity,
                rows: list[tuple[str, str, Sequence[float]]]) -> Strip | None:
    """Dots for every raw sample of each row; None when there are no samples."""
    rows = [(label, css, [s for s in samples if s is not None and drawable(s) and s > 0])
            for label, css, samples in rows]
    rows = [r for r in rows if r[2]]
    if not rows:
        return None
    every = [s for _, _, samples in rows for s in samples]
    scale, ticks, label = value_axis(quantity, every, 110, WIDTH - RIGHT)
    out = []
    for i, (name, css, samples) in enumerate(rows):
        px = scale(np.asarray(samples, dtype=float))
        q1, med, q3 = (float(scale(np.array(q))) for q in np.percentile(samples, [25, 50, 75]))
        out.append(StripRow(name, css, 34 + 26 * i, tuple(round(float(p), 1) for p in px),
                            round(q1, 1), round(med, 1), round(q3, 1)))
    return Strip(chart_id, title, label, scale.log, tuple(ticks), tuple(out), height=34 + 26 * len(out) + 40)
