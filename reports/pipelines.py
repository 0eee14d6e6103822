"""Whole pipelines as the report shows them: the whole's speedup beside the product of its parts', and the ablation.

A view is one pipeline subject (a subject that declares parts) at one size on one machine, at
the commit of its newest results there:

- the whole: `optimized`'s speedup over the pipeline's baseline;
- the product of the parts: each part's speedup as its own subject measured it alone (the
  subject variant the part names), on the same machine at the same commit (and the same size
  when there is one), multiplied; its interval adds the parts' log half-widths in quadrature,
  which treats the parts as independent;
- the product inside the pipeline: the speedups of `only_<part>` multiplied the same way;
- the gap: the whole over the product (1 = the parts multiply; below 1, they overlap);
- per part: its own subject's speedup, the pipeline with it alone on, with it alone left out,
  and what the whole loses without it (optimized over without_<part>);
- for each whole (`optimized` and any other configuration the seed describes): the parts it
  was judged without, and why.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from proofbench.analysis.comparison import SubjectFigures, figures
from proofbench.db.models import Machine
from proofbench.reports.machines import MachineColumn
from proofbench.reports.queries import History

WHOLE = "optimized"


@dataclass(frozen=True)
class Ratio:
    """A speedup (or a product or quotient of speedups) with its 95% interval where one is known."""

    estimate: float
    low: float | None = None
    high: float | None = None

    @property
    def log_half_width(self) -> float | None:
        if not (self.low and self.high and self.low > 0 and self.high > 0):
            return None
        return (math.log(self.high) - math.log(self.low)) / 2


def ratio(speedup: Any) -> Ratio | None:
    """A variant's speedup (anything with estimate, low, high) as a Ratio; None when it has none."""
    if speedup is None or not _finite(speedup.estimate):
        return None
    low, high = (getattr(speedup, k, None) for k in ("low", "high"))
    return Ratio(speedup.estimate, low if _finite(low) else None, high if _finite(high) else None)


def product(ratios: list[Ratio]) -> Ratio:
    """The product of speedups; its interval from the log half-widths in quadrature (independent factors)."""
    center = sum(math.log(r.estimate) for r in ratios)
    return _spread(center, [r.log_half_width for r in ratios])


def quotient(top: Ratio, bottom: Ratio) -> Ratio:
    """top / bottom, its interval as for `product`."""
    return _spread(math.log(top.estimate) - math.log(bottom.estimate), [top.log_half_width, bottom.log_half_width])


def _spread(center: float, widths: list[float | None]) -> Ratio:
    if any(w is None for w in widths):
        return Ratio(math.exp(center))
    half = math.sqrt(sum(w * w for w in widths))
    return Ratio(math.exp(center), math.exp(center - half), math.exp(center + half))


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@dataclass(frozen=True)
class PartRow:
    """One part of the ablation table; None where a figure is missing (`missing` says why for `alone`)."""

    name: str
    description: str
    subject: str
    variant: str
    alone: Ratio | None
    missing: str
    only: Ratio | None
    without: Ratio | None
    adds: Ratio | None  # optimized / without_<part>
    only_memory: float | None  # peak memory's relative change with the part alone on (-0.3: 30% less)
    without_memory: float | None


@dataclass(frozen=True)
class Whole:
    """A configuration of every part the seed turns on at once, and the parts it runs without."""

    variant: str
    speedup: Ratio | None
    memory: float | None
    status: str
    without: tuple[tuple[str, str], ...]  # (part, why)


@dataclass(frozen=True)
class PipelineView:
    """One pipeline subject at one size on one machine, at the commit of its newest results."""

    subject: str
    machine_id: int
    size: str
    commit: str
    whole: Ratio | None
    product: Ratio | None  # None while a part has no figure of its own at this commit
    inside: Ratio | None  # the product of only_<part> speedups in this pipeline
    gap: Ratio | None
    rows: tuple[PartRow, ...]
    wholes: tuple[Whole, ...]


def _variant_figure(fig: SubjectFigures | None, variant: str):
    v = fig.variant(variant) if fig is not None else None
    return v if v is not None and v.status == "ok" else None


def _speedup(fig: SubjectFigures | None, variant: str) -> Ratio | None:
    v = _variant_figure(fig, variant)
    return ratio(v.speedup) if v is not None else None


def _memory(fig: SubjectFigures, variant: str) -> float | None:
    # The relative change of peak memory against the baseline (-0.3: 30% less).
    reduction = fig.reduction(variant, "peak_memory")
    if reduction is None or not reduction.baseline or not math.isfinite(reduction.fraction):
        return None
    return reduction.variant / reduction.baseline - 1.0


def _alone(part: dict, size: str, at_commit: dict[tuple[str, str], SubjectFigures]) -> tuple[Ratio | None, str]:
    # The part's own subject at this commit: the same size when measured, else any size.
    same = at_commit.get((part["subject"], size))
    fig = same or next((f for (s, _), f in sorted(at_commit.items()) if s == part["subject"]), None)
    if fig is None:
        return None, "not measured on this machine at this commit (the quick profile measures it)"
    v = fig.variant(part["variant"])
    if v is None:
        return None, f"variant {part['variant']} not measured at this commit"
    if v.status != "ok":
        return None, f"{v.status}: {v.reason}"
    found = ratio(v.speedup)
    return found, "" if found is not None else "no speedup figure"


def _rows(fig: SubjectFigures, parts: list[dict], at_commit: dict) -> tuple[PartRow, ...]:
    whole = _speedup(fig, WHOLE)
    rows = []
    for part in (p for p in parts if not p.get("left_out")):
        name = part["name"]
        alone, missing = _alone(part, fig.size, at_commit)
        only, without = _speedup(fig, f"only_{name}"), _speedup(fig, f"without_{name}")
        rows.append(PartRow(name, part.get("description", ""), part["subject"], part["variant"], alone, missing,
                            only, without, quotient(whole, without) if whole and without else None,
                            _memory(fig, f"only_{name}"), _memory(fig, f"without_{name}")))
    return tuple(rows)


def _wholes(fig: SubjectFigures, parts: list[dict], variants: dict) -> tuple[Whole, ...]:
    out = []
    for name, declared in variants.items():
        on = set(declared.get("parts", ()) if isinstance(declared, dict) else ())
        if name == "baseline" or name.startswith(("only_", "without_")) or not on:
            continue
        without = tuple((p["name"], p.get("left_out") or "not part of this configuration")
                        for p in parts if p["name"] not in on)
        measured = fig.variant(name)
        status = measured.status if measured is not None else "not measured"
        out.append(Whole(name, _speedup(fig, name), _memory(fig, name), status, without))
    return tuple(out)


def view(fig: SubjectFigures, details: dict, at_commit: dict[tuple[str, str], SubjectFigures],
         machine_id: int) -> PipelineView:
    """The view of one pipeline's figures, with the per-part subjects' figures at the same commit."""
    parts = [p for p in details.get("parts", []) if isinstance(p, dict) and "name" in p]
    rows = _rows(fig, parts, at_commit)
    whole = _speedup(fig, WHOLE)
    product_ = product([r.alone for r in rows]) if rows and all(r.alone for r in rows) else None
    inside = product([r.only for r in rows]) if rows and all(r.only for r in rows) else None
    gap = quotient(whole, product_) if whole and product_ else None
    return PipelineView(fig.subject, machine_id, fig.size, fig.commit, whole, product_, inside, gap, rows,
                        _wholes(fig, parts, details.get("variants") or {}))


def views(session: Session, history: History, columns: list[MachineColumn]) -> dict[tuple[str, int, str], PipelineView]:
    """Every pipeline subject's view per machine and size: (subject, machine id, size) -> view."""
    details = {s.benchmark.subject: s.benchmark.details for s in history.series
               if isinstance(s.benchmark.details, dict) and s.benchmark.details.get("parts")}
    commit_ids = {c.hash: c.id for c in history.commits}
    out: dict[tuple[str, int, str], PipelineView] = {}
    for col in columns:
        cached: dict[str, dict[tuple[str, str], SubjectFigures]] = {}
        for (subject, size), fig in col.figures.items():
            if subject not in details or fig.commit not in commit_ids:
                continue
            if fig.commit not in cached:
                cached[fig.commit] = _at(session, col.machine, commit_ids[fig.commit])
            out[(subject, col.machine.id, size)] = view(fig, details[subject], cached[fig.commit], col.machine.id)
    return out


def _at(session: Session, machine: Machine, commit_id: int) -> dict[tuple[str, str], SubjectFigures]:
    return {(f.subject, f.size): f for f in figures(session, machine, commit_id)}
