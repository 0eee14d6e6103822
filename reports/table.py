"""The terminal table after a run: subject, variant, time, items/s, speedup, claim and verdict."""
from __future__ import annotations

import sys

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from proofbench.claim import Claim
from proofbench.reports import formatting as fmt


def print_latest(engine: Engine, machine_name: str, claims: tuple[Claim, ...]) -> None:
    """Print the newest figures of `machine_name` with the claims' verdicts (text from data is not markup)."""
    from rich.console import Console
    from rich.table import Table

    from proofbench.reports.render import machine_views

    with Session(engine) as session:
        views = [v for v in machine_views(session, list(claims)) if v.machine.name == machine_name][-1:]
    table = Table(title=fmt.cell(f"proofbench — {machine_name}"), highlight=False)
    for column in ("subject", "size", "variant", "time", "items/s", "speedup [95% CI]", "claim", "verdict"):
        table.add_column(column)
    for view in views:
        for s in view.subjects:
            for v in s.variants:
                claim = next((c for c in claims if c.subject == s.subject and c.variant == v.variant), None)
                verdict = view.verdicts.get(claim.id) if claim else None
                table.add_row(*(fmt.cell(cell) for cell in (
                    s.subject, s.size, v.variant, fmt.seconds(v.time.median) if v.time else v.status,
                    fmt.rate(v.items_per_second),
                    f"{fmt.factor(v.speedup.estimate)} {fmt.interval(v.speedup.low, v.speedup.high)}"
                    if v.speedup else ("" if v.status == "ok" else v.reason[:60]),
                    f"{fmt.promise(claim)} ({fmt.source(claim.source)})" if claim else "",
                    verdict.label if verdict else "")))
    Console(width=None if sys.stdout.isatty() else 160).print(table)
