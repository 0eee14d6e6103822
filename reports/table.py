"""The run table: subject, variant, time, items/s, speedup, its outcome, claim and verdict, for the
newest results of each machine; as a terminal table, Markdown, or the documented JSON.

The JSON ("proofbench-table", version `FORMAT_VERSION`) is for scripts:

    {"format": "proofbench-table", "version": 1,
     "records": [{"subject", "size", "variant", "machine", "commit", "status", "reason",
                  "time_s", "items_per_second",
                  "speedup": {"estimate", "low", "high"} | null,
                  "verdict": "faster" | "slower" | "no significant difference" | "inconclusive" | null,
                  "verdict_reason": "too noisy here (...)" | "" ,
                  "rounds": int | null, "rounds_kept": int | null,
                  "isa": "bf16 without ... is emulated on this CPU" | "",
                  "claims": [{"id", "promised", "verdict", "reason"}, ...]}, ...]}

One record per subject, size, variant and machine, with every claim about that variant (by id;
none: []); the baseline's `speedup` and `verdict` are null (it is the reference). Numbers are
null where undefined, never NaN. Version 1 held one `claim`, whichever came first.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from proofbench.analysis.comparison import SubjectFigures, VariantFigures
from proofbench.analysis.hardware import resolve_machine
from proofbench.analysis.verdict import Verdict
from proofbench.claim import Claim
from proofbench.db.models import Benchmark, Result
from proofbench.db.session import location, nothing_measured
from proofbench.reports import formatting as fmt

FORMAT = "proofbench-table"
FORMAT_VERSION = 2
_COLUMNS = ("subject", "size", "variant", "time", "items/s", "speedup [95% CI]", "outcome", "claim", "verdict")


@dataclass(frozen=True)
class Line:
    """One variant of one subject at one size on one machine, with every claim about it (by id)
    and its verdict there."""

    machine: str
    commit: str
    subject: SubjectFigures
    variant: VariantFigures
    claims: tuple[tuple[Claim, Verdict | None], ...]


def lines(engine: Engine, claims: tuple[Claim, ...] | None = None, machine: str | None = None) -> list[Line]:
    """The newest figures of every machine (or of `machine`: a name or NAME@FINGERPRINT, an
    InputError naming the machines with results when it has none), judged against `claims`
    (default: the claims stored in the database)."""
    from proofbench.reports.render import machine_views, stored_claims

    out = []
    with Session(engine) as session:
        claims = list(claims) if claims is not None else stored_claims(session)[0]
        found = machine_views(session, claims)
        names = [machine] if machine is not None else sorted({v.machine.name for v in found})
        chosen = {resolve_machine(session, name).id for name in names}  # each name's fingerprint measured last
    by_id = sorted(claims, key=lambda c: c.id)  # one order, whichever command read them
    for view in (v for v in found if v.machine.id in chosen):
        for s in view.subjects:
            for v in s.variants:
                about = tuple((c, view.verdicts.get(c.id)) for c in by_id
                              if c.subject == s.subject and c.variant == v.variant)
                out.append(Line(view.machine.name, s.commit, s, v, about))
    return out


def nothing_shown(engine: Engine, machine: str | None = None) -> str:
    """Why `lines` found nothing (one line): no results at all, only plain asv benchmarks' (no
    speedups), or none of a subject at the newest commit."""
    with Session(engine) as session:
        query = select(Benchmark.kind, func.count()).join(Result, Result.benchmark_id == Benchmark.id)
        if machine is not None:
            query = query.where(Result.machine_id == resolve_machine(session, machine).id)
        stored = dict(session.execute(query.group_by(Benchmark.kind)).all())
    where = location(engine) + (f" (machine {machine!r})" if machine is not None else "")
    if not stored:
        return nothing_measured(where, "show")
    if not stored.get("subject"):
        return (f"{where}: no speedups to show: `table` shows proofbench subjects' speedups (each variant against "
                f"its baseline), and the {stored.get('plain', 0)} result(s) here are plain asv benchmarks' (see "
                f"them with `proofbench report`, or `proofbench compare MACHINE_A MACHINE_B`)")
    return (f"{where}: no speedups to show: the newest commit measured holds no proofbench subject's results "
            f"(`proofbench report` shows every commit's)")


def _number(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _outcome(v) -> tuple[str | None, str]:
    # the speedup's word and, for "inconclusive", why
    if v.speedup is None or v.variant == "baseline":
        return None, ""
    word = str(v.speedup.difference)
    s = v.speedup
    return word, fmt.undecided(s.why, s.estimate, s.low, s.high, (s.kept, s.rounds)) if word == "inconclusive" else ""


def record(line: Line) -> dict:
    """One JSON record (see the module docstring)."""
    v, s = line.variant, line.variant.speedup
    word, why = _outcome(v)
    paired = s is not None and v.variant != "baseline"
    return {
        "subject": line.subject.subject, "size": line.subject.size, "variant": v.variant, "machine": line.machine,
        "commit": line.commit, "status": v.status, "reason": v.reason,
        "time_s": _number(v.time.median) if v.time else None, "items_per_second": _number(v.items_per_second),
        "speedup": {"estimate": _number(s.estimate), "low": _number(s.low), "high": _number(s.high)}
        if paired else None,
        "verdict": word, "verdict_reason": why,
        "rounds": s.rounds if paired else None, "rounds_kept": s.kept if paired else None,
        "isa": fmt.isa_words(v.isa),
        "claims": [{"id": claim.id, "promised": fmt.promise(claim), "verdict": verdict.label if verdict else None,
                    "reason": fmt.verdict_reason(verdict) if verdict else ""} for claim, verdict in line.claims],
    }


def as_json(found: list[Line]) -> dict:
    """The documented JSON document."""
    return {"format": FORMAT, "version": FORMAT_VERSION, "records": [record(line) for line in found]}


def _cells(line: Line, apart: str = "\n") -> tuple[str, ...]:
    # every claim on a line of its own within the cell, its verdict beside it (`apart` for Markdown)
    v = line.variant
    word, why = _outcome(v)
    speed = f"{fmt.factor(v.speedup.estimate)} {fmt.interval(v.speedup.low, v.speedup.high)}" \
        if v.speedup and v.variant != "baseline" else ""
    outcome = ": ".join(x for x in (word, why) if x) if v.status == "ok" else fmt.short(v.reason, 160)
    return (line.subject.subject, line.subject.size, v.variant, fmt.seconds(v.time.median) if v.time else v.status,
            fmt.rate(v.items_per_second), speed, "; ".join(x for x in (outcome, fmt.isa_words(v.isa)) if x),
            apart.join(f"{fmt.promise(claim)} ({fmt.source(claim.source)})" for claim, _ in line.claims),
            apart.join(verdict.label if verdict else "" for _, verdict in line.claims))


def markdown(found: list[Line]) -> str:
    """One Markdown table per machine."""
    out = []
    for machine in dict.fromkeys(line.machine for line in found):
        out += [f"### {machine}", "", "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in _cells(line, "<br>")) + " |"
                for line in found if line.machine == machine]
        out.append("")
    return "\n".join(out)


def print_text(found: list[Line]) -> None:
    """One terminal table per machine (text from data is never read as markup)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 220)
    for machine in dict.fromkeys(line.machine for line in found):
        table = Table(title=fmt.cell(f"proofbench — {machine}"), highlight=False)
        for column in _COLUMNS:
            table.add_column(column)
        for line in found:
            if line.machine == machine:
                table.add_row(*(fmt.cell(cell) for cell in _cells(line)))
        console.print(table)


def print_latest(engine: Engine, machine_name: str, claims: tuple[Claim, ...], subjects: set[str] | None = None
                 ) -> None:
    """The table after a run: the newest figures of `machine_name` with the claims' verdicts (none
    when the run stored nothing: the run has said so already); of `subjects` only, where a run
    measured some (the others' rows are earlier runs')."""
    print_text([line for line in lines(engine, claims) if line.machine == machine_name
                and (subjects is None or line.subject.subject in subjects)])
