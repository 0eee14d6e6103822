"""Subject pages: each subject's history per machine and size, as charts with change points.

A group is one machine, environment and size. Its charts: time per call and items/s for every
variant (items per call are the workload's, stored with the baseline), peak memory where
measured, and each variant's speedup over the baseline per commit: the paired estimate of its
alternating rounds (`track_speedup`, the figure the verdicts judge), and only where none is
stored the ratio of the per-commit median times, dashed and named so (the interval at the
newest commit is on the index).
Change points come from reports/changes.py over every metric of the subject (as the nightly check
looks at every series); those of time and peak memory are numbered on their charts, and all are
listed under the charts with the commit and its subject line.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from proofbench.analysis.comparison import SubjectFigures
from proofbench.claim import Claim
from proofbench.db.models import Commit
from proofbench.reports import charts
from proofbench.reports.alerts import commits_in_range
from proofbench.reports.changes import Step
from proofbench.reports.machines import MachineColumn
from proofbench.reports.output import slug
from proofbench.reports.queries import History, Series

TIME = charts.Quantity("seconds", "time per call ({unit})")
MEMORY = charts.Quantity("bytes", "peak memory ({unit})")
SPEEDUP = charts.Quantity("factor", "speedup ({unit})")
DETECTED = {"time": "time per call", "peak_memory": "peak memory"}
TICKS = 5


@dataclass(frozen=True)
class ChangeNote:
    """A change point, told in words: where, which series, from what to what, at which commit."""

    number: int
    subject: str
    page: str
    anchor: str
    machine: str
    size: str
    variant: str
    metric: str
    kind: str  # seconds | bytes: how `before`/`after` read
    chart: str  # id of the chart the change is marked on
    commit: Commit
    previous: Commit
    step: Step

    @property
    def commits(self) -> int | None:
        """The commits the step may have come with, after `previous` up to `commit`."""
        return commits_in_range(self.commit, self.previous, (self.step.rank, self.step.previous_rank))

    @property
    def marker(self) -> tuple[int, int, str, str]:
        """How `charts.line_chart` marks it: rank, number, css class, tooltip."""
        title = f"{self.number}: {self.commit.hash[:10]} {self.commit.subject}"
        return self.step.rank, self.number, self.step.mark, title


@dataclass(frozen=True)
class Group:
    """One machine, environment and size of a subject: its newest figures, charts and changes."""

    anchor: str
    column: MachineColumn
    size: str
    environment: str | None
    figures: SubjectFigures | None
    charts: tuple[charts.Chart, ...]
    strip: charts.Strip | None
    notes: tuple[ChangeNote, ...]
    first: Commit
    last: Commit
    commits: int


@dataclass(frozen=True)
class SubjectPage:
    """Everything the page of one subject shows."""

    subject: str
    area: str
    page: str
    item: str
    description: str
    variants: dict
    equivalence: dict
    claims: tuple[Claim, ...]
    groups: tuple[Group, ...]


_Groups = dict[str, dict[tuple[int, int, str], dict[str, dict[str, Series]]]]


def _organise(series: list[Series]) -> _Groups:
    out: _Groups = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for s in series:
        out[s.benchmark.subject][(s.machine_id, s.environment_id, s.size)][s.benchmark.metric][s.variant] = s
    return out


def _variant_order(group: dict[str, dict[str, Series]]) -> list[str]:
    names = {v for by_variant in group.values() for v in by_variant}
    declared = next((list((s.benchmark.details or {}).get("variants", {})) for by_variant in group.values()
                     for s in by_variant.values()), [])
    order = [v for v in declared if v in names] + sorted(names - set(declared))
    return sorted(order, key=lambda v: v != "baseline")


def detectable(history: History, machine_ids: set[int]) -> list[tuple[tuple, Series]]:
    """The series change points are looked for in (every metric's, as the nightly check's), each
    with its place on the pages: (subject, (machine, environment, size), metric, variant)."""
    return [((s.benchmark.subject, (s.machine_id, s.environment_id, s.size), s.benchmark.metric, s.variant), s)
            for s in history.series if s.machine_id in machine_ids]


def build(history: History, columns: dict[int, MachineColumn], claims: list[Claim], page_of: Callable[[str], str],
          environments: dict[int, str], steps: dict[tuple, list[Step]]) -> tuple[list[SubjectPage], list[ChangeNote]]:
    """Every subject page, and every change note (for the regressions and commits pages).

    `steps` holds the change points by the places `detectable` gives.
    """
    organised = _organise([s for s in history.series if s.machine_id in columns])
    pages, notes = [], []
    for subject in sorted(organised, key=lambda s: (_any(organised[s]).benchmark.area, s)):
        page = _page(subject, organised[subject], steps, history, columns, claims, page_of(subject), environments)
        pages.append(page)
        notes.extend(n for g in page.groups for n in g.notes)
    return pages, notes


def _any(groups: dict) -> Series:
    return next(s for group in groups.values() for by_variant in group.values() for s in by_variant.values())


def _page(subject: str, groups: dict, steps: dict, history: History, columns: dict[int, MachineColumn],
          claims: list[Claim], page: str, environments: dict[int, str]) -> SubjectPage:
    bench = _any(groups).benchmark
    details = bench.details if isinstance(bench.details, dict) else {}
    several_envs = len({env for _, env, _ in groups}) > 1
    built = []
    for key in sorted(groups, key=lambda k: (columns[k[0]].label, k[1], k[2])):
        machine_id, env_id, size = key
        context = _Context(subject, key, page, columns[machine_id], steps, history,
                           [c for c in claims if c.subject == subject], bench.item or "item")
        built.append(_group(context, groups[key], environments.get(env_id) if several_envs else None))
    variants = details.get("variants") if isinstance(details.get("variants"), dict) else {}
    equivalence = details.get("equivalence") if isinstance(details.get("equivalence"), dict) else {}
    return SubjectPage(subject, bench.area, page, bench.item, str(details.get("description", "")), variants,
                       equivalence, tuple(c for c in claims if c.subject == subject), tuple(built))


@dataclass(frozen=True)
class _Context:
    subject: str
    key: tuple[int, int, str]
    page: str
    column: MachineColumn
    steps: dict
    history: History
    claims: list[Claim]
    item: str

    @property
    def anchor(self) -> str:
        """The group's HTML id on its page (from ids and a slug of the size: safe as is)."""
        machine_id, env_id, size = self.key
        return f"m{machine_id}-e{env_id}-{slug(size)}"


def _group(ctx: _Context, group: dict[str, dict[str, Series]], environment: str | None) -> Group:
    order = _variant_order(group)
    css = {v: f"c{min(i, 5)}" for i, v in enumerate(order)}
    notes = _notes(ctx, group, order)
    ranks = sorted({r for by_variant in group.values() for s in by_variant.values() for r in s.ranks})
    picks = [ranks[round(i * (len(ranks) - 1) / (TICKS - 1))] for i in range(TICKS)] if len(ranks) > 1 else ranks
    ticks = [(r, ctx.history.commit(r).hash[:7]) for r in dict.fromkeys(picks)]
    x_label = f"commit, oldest to newest ({len(ranks)} measured)"
    marks = {m: [n.marker for n in notes if n.metric == DETECTED[m]] for m in DETECTED}
    built = [
        _time_chart(ctx, group, order, css, ticks, x_label, marks["time"]),
        _rate_chart(ctx, group, order, css, ticks, x_label, marks["time"]),
        _memory_chart(ctx, group, order, css, ticks, x_label, marks["peak_memory"]),
        _speedup_chart(ctx, group, order, css, ticks, x_label, marks["time"]),
    ]
    figures = ctx.column.figures_in(ctx.key[1]).get((ctx.subject, ctx.key[2]))
    return Group(ctx.anchor, ctx.column, ctx.key[2], environment, figures, tuple(c for c in built if c),
                 _strip(ctx, figures, css), tuple(notes), ctx.history.commit(ranks[0]),
                 ctx.history.commit(ranks[-1]), len(ranks))


def _notes(ctx: _Context, group: dict[str, dict[str, Series]], order: list[str]) -> list[ChangeNote]:
    found = [(step, metric, variant) for metric in sorted(group) for variant in order
             if variant in group[metric]
             for step in ctx.steps.get((ctx.subject, ctx.key, metric, variant), [])]
    found.sort(key=lambda f: (f[0].rank, f[1], order.index(f[2])))
    return [ChangeNote(i + 1, ctx.subject, ctx.page, ctx.anchor, ctx.column.label, ctx.key[2], variant,
                       DETECTED.get(metric, metric.replace("_", " ")), _kind(group[metric][variant]),
                       _chart_of(ctx.anchor, metric), ctx.history.commit(step.rank),
                       ctx.history.commit(step.previous_rank), step)
            for i, (step, metric, variant) in enumerate(found)]


def _kind(series: Series) -> str:
    return series.benchmark.unit if series.benchmark.unit in ("seconds", "bytes") else "other"


def _chart_of(anchor: str, metric: str) -> str:
    # the chart a change is marked on; a metric without one is listed under its group
    return {"time": f"{anchor}-time", "peak_memory": f"{anchor}-memory"}.get(metric, anchor)


def _plots(series: dict[str, Series], order: list[str], css: dict[str, str]) -> list[charts.Plot]:
    return [charts.Plot(v, css[v], series[v].ranks, series[v].values) for v in order if v in series]


def _time_chart(ctx, group, order, css, ticks, x_label, marks) -> charts.Chart | None:
    return charts.line_chart(f"{ctx.anchor}-time", "Time per call", TIME, _plots(group.get("time", {}), order, css),
                             ticks, x_label, marks)


def _memory_chart(ctx, group, order, css, ticks, x_label, marks) -> charts.Chart | None:
    return charts.line_chart(f"{ctx.anchor}-memory", "Peak memory", MEMORY,
                             _plots(group.get("peak_memory", {}), order, css), ticks, x_label, marks)


def _aligned(ranks: list[int], other: Series | None) -> np.ndarray:
    """`other`'s values at the commits `ranks` (NaN where it has none); both ranks ascend."""
    if other is None:
        return np.full(len(ranks), math.nan)
    values = np.asarray(other.values, dtype=float)
    if list(ranks) == other.ranks:
        return values
    have, want = np.asarray(other.ranks), np.asarray(ranks)
    at = np.minimum(np.searchsorted(have, want), len(have) - 1)
    return np.where(have[at] == want, values[at], math.nan)


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = top / bottom
    return np.where(np.isfinite(out), out, math.nan)


def _rate_chart(ctx, group, order, css, ticks, x_label, marks) -> charts.Chart | None:
    # A variant's items per call where it stored them, else the baseline's (as the figures take
    # them): a variant's track_items is skipped by design, which is no failure.
    items, plots = group.get("items", {}), []
    for v in order:
        time = group.get("time", {}).get(v)
        if time is not None and (v in items or "baseline" in items):
            own = _aligned(time.ranks, items.get(v))
            per_call = np.where(np.isfinite(own), own, _aligned(time.ranks, items.get("baseline")))
            plots.append(charts.Plot(v, css[v], time.ranks, _ratio(per_call, np.asarray(time.values, dtype=float))))
    quantity = charts.Quantity("rate", f"throughput ({{unit}}{ctx.item}s/s)")
    return charts.line_chart(f"{ctx.anchor}-rate", f"Throughput ({ctx.item}s per second)", quantity, plots,
                             ticks, x_label, marks)


def _speedup_chart(ctx, group, order, css, ticks, x_label, marks) -> charts.Chart | None:
    times, paired = group.get("time", {}), group.get("speedup", {})
    variants = [v for v in order if v != "baseline" and (v in paired or v in times)]
    plots = [p for v in variants for p in _speedup_plots(v, css[v], paired.get(v), times.get(v), times.get("baseline"))]
    rounds, ratio = any(not p.dashed for p in plots), any(p.dashed for p in plots)
    kind = ("alternating rounds; dashed: time ratio" if rounds and ratio
            else "time ratio of separate processes" if ratio else "alternating rounds")
    rules = [(1.0, "1× (as fast as the baseline)", "rule-even"), *_claim_rules(ctx.claims, variants)]
    return charts.line_chart(f"{ctx.anchor}-speedup", f"Speedup over the baseline ({kind})", SPEEDUP, plots,
                             ticks, x_label, marks, rules)


def _speedup_plots(variant: str, css: str, paired: Series | None, time: Series | None,
                   base: Series | None) -> list[charts.Plot]:
    """The variant's stored paired speedups; where it has none, the baseline's median time over
    its own, dashed and labelled "time ratio" (separate processes: no verdict reads it)."""
    ranks = sorted(set(paired.ranks if paired else ()) | set(time.ranks if time and base else ()))
    if not ranks:
        return []
    stored = _aligned(ranks, paired)
    have = np.isfinite(stored)
    ratio = np.where(have, math.nan, _ratio(_aligned(ranks, base), _aligned(ranks, time)))
    missing = ~have & np.isnan(ratio)  # a failure only where neither figure is there
    plots = [charts.Plot(variant, css, ranks, stored, failed=missing)] if have.any() or missing.all() else []
    if np.isfinite(ratio).any():
        plots.append(charts.Plot(f"{variant} (time ratio)", css, ranks, ratio, failed=missing, dashed=True))
    return plots


def _claim_rules(claims: list[Claim], variants: list[str]) -> list[tuple[float, str, str]]:
    # one line and label per promised figure, naming every variant promised it
    by_figure: dict[float, list[Claim]] = defaultdict(list)
    for c in claims:
        if c.kind == "speedup" and c.low is not None and c.variant in variants:
            by_figure[c.low].append(c)
    return [(low, f"claimed {low:g}× ({'/'.join(dict.fromkeys(c.variant for c in same))}, "
                  f"{'/'.join(dict.fromkeys(c.source for c in same))})", "rule-claim")
            for low, same in sorted(by_figure.items())]


def _strip(ctx: _Context, figures: SubjectFigures | None, css: dict[str, str]) -> charts.Strip | None:
    if figures is None:
        return None
    rows = [(v.variant, css.get(v.variant, "c5"), v.samples) for v in figures.variants]
    return charts.strip_chart(f"{ctx.anchor}-samples", f"Raw samples of the newest run (commit {figures.commit[:7]})",
                              TIME, rows)
