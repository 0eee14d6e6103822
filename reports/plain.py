"""Pages of plain asv benchmarks (any suite's): every parameter combination's history per machine.

One page per benchmark name, like `asv publish`'s: per machine (and environment where there are
several) a table of every parameter combination with its newest value, then one chart per
combination over commits in their true order, a line per asv `version` of the benchmark (a new
version is a new series), a tooltip on every point (commit, date, subject line, value), and the
change points (reports/changes.py) numbered on the chart and listed with their commit.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

from proofbench import parameters
from proofbench.db.models import Commit
from proofbench.reports import charts
from proofbench.reports import formatting as fmt
from proofbench.reports.changes import Step
from proofbench.reports.machines import MachineColumn
from proofbench.reports.queries import History, Series
from proofbench.reports.subjects import TICKS, ChangeNote

_QUANTITIES = {"seconds": charts.Quantity("seconds", "time ({unit})"),
               "bytes": charts.Quantity("bytes", "memory ({unit})")}


@dataclass(frozen=True)
class Combination:
    """One parameter combination on one machine: its chart, newest value and change points."""

    anchor: str
    params: str  # "size=100, variant=d", or "" without parameters
    chart: charts.Chart | None
    newest: float | None
    newest_commit: Commit
    points: int
    notes: tuple[ChangeNote, ...]


@dataclass(frozen=True)
class PlainGroup:
    """One machine and environment of a plain benchmark."""

    anchor: str
    column: MachineColumn
    environment: str | None
    combinations: tuple[Combination, ...]


@dataclass(frozen=True)
class PlainPage:
    """Everything the page of one plain benchmark shows."""

    name: str
    module: str
    page: str
    type: str  # asv's: time, memory, peakmemory, track
    unit: str
    param_names: tuple[str, ...]
    versions: int
    groups: tuple[PlainGroup, ...]

    @property
    def kind(self) -> str:
        """How its values read: seconds, bytes, or other (a number in `unit`)."""
        return _kind(self.unit)

    def combinations_on(self, machine_id: int) -> int:
        """How many parameter combinations were measured on the machine row `machine_id`."""
        return sum(len(g.combinations) for g in self.groups if g.column.machine.id == machine_id)

    @property
    def open_regressions(self) -> int:
        return sum(1 for g in self.groups for c in g.combinations for n in c.notes if n.step.open)


def module(name: str) -> str:
    """The suite module a benchmark name starts with (`benchmarks` of `benchmarks.Nrm2.time_nrm2`);
    a benchmark at the top of the suite is its own."""
    return name.split(".", 1)[0] if "." in name else "(top level)"


def detectable(history: History, machine_ids: set[int]) -> list[tuple[tuple, Series]]:
    """The plain series change points are looked for in, keyed ("plain", series key)."""
    return [(("plain", s.key), s) for s in history.plain if s.machine_id in machine_ids]


def build(history: History, columns: dict[int, MachineColumn], page_of: Callable[[str], str],
          environments: dict[int, str], steps: dict[tuple, list[Step]]) -> tuple[list[PlainPage], list[ChangeNote]]:
    """Every plain benchmark's page, and its change notes (for the regressions and commits pages)."""
    by_name: dict[str, list[Series]] = defaultdict(list)
    for s in history.plain:
        if s.machine_id in columns:
            by_name[s.benchmark.name].append(s)
    pages = [_page(name, found, history, columns, page_of(name), environments, steps)
             for name, found in sorted(by_name.items())]
    return pages, [n for p in pages for g in p.groups for c in g.combinations for n in c.notes]


def _page(name: str, found: list[Series], history: History, columns: dict[int, MachineColumn], page: str,
          environments: dict[int, str], steps: dict) -> PlainPage:
    newest = max(found, key=lambda s: (s.last_rank, s.benchmark.id)).benchmark
    versions = sorted({s.benchmark.version: min(s.ranks) for s in found}.items(), key=lambda kv: kv[1])
    labels = {v: (f"version {i + 1}" if len(versions) > 1 else "value", f"c{min(i, 5)}", i)
              for i, (v, _) in enumerate(versions)}
    grouped: dict[tuple[int, int], dict[str, list[Series]]] = defaultdict(lambda: defaultdict(list))
    for s in found:
        grouped[(s.machine_id, s.environment_id)][s.params_key].append(s)
    several = len({e for _, e in grouped}) > 1
    groups = []
    for (machine_id, env_id), combos in sorted(grouped.items(), key=lambda kv: (columns[kv[0][0]].label, kv[0][1])):
        anchor = f"m{machine_id}-e{env_id}"
        built = [_combination(f"{anchor}-{i}", name, page, series, newest.param_names, history, columns[machine_id],
                              labels, steps) for i, series in enumerate(_sorted(combos))]
        groups.append(PlainGroup(anchor, columns[machine_id], environments.get(env_id) if several else None,
                                 tuple(built)))
    return PlainPage(name, module(name), page, newest.metric, newest.unit, tuple(newest.param_names or ()),
                     len(versions), tuple(groups))


def _sorted(combos: dict[str, list[Series]]) -> list[list[Series]]:
    return sorted(combos.values(), key=lambda series: parameters.order(series[0].params))


def params_text(names, values) -> str:
    """`size=100, variant=d`: each value with its parameter's name."""
    names = list(names or ())
    return ", ".join(f"{names[i] if i < len(names) else f'p{i + 1}'}={v}" for i, v in enumerate(values))


def _combination(anchor: str, name: str, page: str, series: list[Series], names, history: History,
                 column: MachineColumn, labels: dict, steps: dict) -> Combination:
    series = sorted(series, key=lambda s: labels[s.benchmark.version][2])
    params = params_text(names, series[0].params)
    unit = series[0].benchmark.unit
    ranks = sorted({r for s in series for r in s.ranks})
    found = [(step, s) for s in series for step in steps.get(("plain", s.key), [])]
    found.sort(key=lambda f: f[0].rank)
    notes = tuple(ChangeNote(i + 1, name, page, anchor, column.label, params,
                             labels[s.benchmark.version][0] if len(labels) > 1 else "", s.benchmark.metric,
                             _kind(unit), f"{anchor}-chart", history.commit(step.rank),
                             history.commit(step.previous_rank), step) for i, (step, s) in enumerate(found))
    plots = [charts.Plot(labels[s.benchmark.version][0], labels[s.benchmark.version][1], s.ranks, s.values,
                         [_tip(history.commit(r), v, unit) for r, v in zip(s.ranks, s.values)]) for s in series]
    picks = [ranks[round(i * (len(ranks) - 1) / (TICKS - 1))] for i in range(TICKS)] if len(ranks) > 1 else ranks
    marks = [n.marker for n in notes]
    chart = charts.line_chart(f"{anchor}-chart", params or name.rpartition(".")[2], _quantity(series[0]), plots,
                              [(r, history.commit(r).hash[:7]) for r in dict.fromkeys(picks)],
                              f"commit, oldest to newest ({len(ranks)} measured)", marks)
    last = max(series, key=lambda s: s.last_rank)
    value = last.values[-1]
    return Combination(anchor, params, chart, value if math.isfinite(value) else None,
                       history.commit(last.last_rank), len(ranks), notes)


def _kind(unit: str) -> str:
    return unit if unit in _QUANTITIES else "other"


def _quantity(s: Series) -> charts.Quantity:
    unit = s.benchmark.unit
    return _QUANTITIES.get(unit) or charts.Quantity("rate", f"{s.benchmark.metric} ({{unit}}{unit})")


def _tip(commit: Commit, value: float, unit: str) -> str:
    when = commit.committed_at or commit.results_date
    shown = fmt.measured(value, unit)
    return " · ".join(filter(None, (commit.hash[:10], fmt.day(when) if when else "", fmt.short(commit.subject, 80),
                                    shown if math.isfinite(value) else "failed or skipped")))


def by_module(pages: list[PlainPage]) -> list[tuple[str, list[PlainPage]]]:
    """The pages grouped by suite module, modules and benchmarks by name."""
    out: dict[str, list[PlainPage]] = defaultdict(list)
    for p in pages:
        out[p.module].append(p)
    return sorted(out.items())
