"""The index matrix (subjects by area x machines) and the claims ledger, as rows for templates.

A cell holds the speedup of each non-baseline variant over the baseline at the subject's
largest size on that machine (Hodges-Lehmann estimate and 95% interval from raw samples),
coloured by the verdict of the claim about that variant when there is one, else by what the
Mann-Whitney U test says (faster, slower, no significant difference).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from proofbench.analysis.comparison import SubjectFigures
from proofbench.analysis.verdict import Verdict
from proofbench.claim import Claim
from proofbench.reports.formatting import css_class
from proofbench.reports.machines import MachineColumn
from proofbench.stats import Speedup

# The seed catalogue's areas in the order data flows through a model; other areas follow by name.
AREA_ORDER = ("loading", "tokenization", "training", "inference", "quantization")

@dataclass(frozen=True)
class Entry:
    """One variant against the baseline in one cell."""

    variant: str
    status: str
    reason: str
    speedup: Speedup | None
    verdict: Verdict | None
    claim: Claim | None
    css: str


@dataclass(frozen=True)
class Cell:
    """One subject on one machine: its entries, colour, size shown and link to the charts."""

    column: MachineColumn
    figures: SubjectFigures | None
    entries: tuple[Entry, ...]
    css: str
    link: str


@dataclass(frozen=True)
class Row:
    """One subject across the machines."""

    subject: str
    area: str
    page: str
    description: str
    claims: tuple[Claim, ...]
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class LedgerRow:
    """One claim and its verdict on every machine."""

    claim: Claim
    page: str | None
    verdicts: tuple[tuple[MachineColumn, Verdict], ...]


def _claim_for(claims: list[Claim], subject: str, variant: str) -> Claim | None:
    mine = [c for c in claims if c.subject == subject and c.variant == variant]
    return next((c for c in mine if c.kind == "speedup"), mine[0] if mine else None)


def _speed_css(s: Speedup | None) -> str:
    if s is None:
        return "s-none"
    return {"faster": "s-faster", "slower": "s-slower"}.get(s.difference, "s-same")


def _entries(col: MachineColumn, fig: SubjectFigures, claims: list[Claim]) -> tuple[Entry, ...]:
    base = fig.baseline
    if base is None or base.status != "ok":
        status, reason = (base.status, base.reason) if base else ("failed", "no baseline result")
        return (Entry("baseline", status, reason, None, None, None, css_class(status)),)
    out = []
    for v in fig.variants:
        if v.variant == "baseline":
            continue
        claim = _claim_for(claims, fig.subject, v.variant)
        verdict = col.verdicts.get(claim.id) if claim else None
        if v.status != "ok":
            css = css_class(v.status)
        else:
            css = css_class(verdict.label) if verdict else _speed_css(v.speedup)
        out.append(Entry(v.variant, v.status, v.reason, v.speedup, verdict, claim, css))
    out.sort(key=lambda e: e.variant != "optimized")
    return tuple(out)


def _cell(col: MachineColumn, subject: str, claims: list[Claim], page: str) -> Cell:
    fig = col.largest(subject)
    if fig is None:
        return Cell(col, None, (), "s-none", "")
    entries = _entries(col, fig, claims)
    return Cell(col, fig, entries, entries[0].css if entries else "s-none", f"{page}#{col.anchor}" if page else "")


def rows(columns: list[MachineColumn], claims: list[Claim], pages: dict[str, str]) -> list[Row]:
    """One row per measured subject, areas in the declared order, subjects by name."""
    subjects: dict[str, tuple[str, str]] = {}
    for col in columns:
        for fig in col.figures.values():
            subjects.setdefault(fig.subject, (fig.area, fig.description))
    order = {area: i for i, area in enumerate(AREA_ORDER)}
    out = []
    for subject, (area, description) in sorted(subjects.items(), key=lambda kv: (order.get(kv[1][0], 99),
                                                                                 kv[1][0], kv[0])):
        page = pages.get(subject, "")
        out.append(Row(subject, area, page, description, tuple(c for c in claims if c.subject == subject),
                       tuple(_cell(col, subject, claims, page) for col in columns)))
    return out


def by_area(subject_rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """Rows grouped by area, keeping their order."""
    out: dict[str, list[Row]] = {}
    for row in subject_rows:
        out.setdefault(row.area, []).append(row)
    return list(out.items())


def ledger(columns: list[MachineColumn], claims: list[Claim], pages: dict[str, str]) -> list[LedgerRow]:
    """Every claim (by subject, then id) with its verdict on every machine."""
    return [LedgerRow(c, pages.get(c.subject), tuple((col, col.verdicts[c.id]) for col in columns)) for c in claims]


def tally(ledger_rows: list[LedgerRow]) -> list[tuple[str, int]]:
    """How many (claim, machine) verdicts carry each label, most common first."""
    counts = Counter(v.label for row in ledger_rows for _, v in row.verdicts)
    return counts.most_common()
