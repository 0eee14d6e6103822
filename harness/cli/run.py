"""`proofbench run`: measure a profile on the checkout in hand through asv, ingest, report."""
from __future__ import annotations

import argparse
import sys

from proofbench.cli.common import add_db_option, console, engine, report_ingest, sources


def add_parser(sub) -> None:
    parser = sub.add_parser("run", help="measure a profile on the checkout in hand, ingest, report")
    parser.add_argument("--profile", default=None, help="quick (default), full, gpu or smoke")
    parser.add_argument("--bench", metavar="REGEX", help="only benchmarks whose name matches")
    parser.add_argument("--no-report", action="store_true", help="skip rendering the HTML site")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from proofbench.claim import load_claims
    from proofbench.machine.capture import capture
    from proofbench.pipeline import runner
    from proofbench.pipeline.generate import generate
    from proofbench.pipeline.ingest import ingest, sync_claims
    from proofbench.profile import get_profile
    from proofbench.registry import load

    profile = get_profile(args.profile)
    for path in generate(load()):
        console.print(f"[yellow]regenerated {path} (commit it for runs across commits)")
    db = engine(args)
    machine = capture()
    console.print(f"profile [bold]{profile.name}[/]: {profile.description} (device {profile.device}, "
                  f"{profile.torch_threads} torch thread(s))")
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("starting asv", total=100)
        outcome = runner.run(profile, machine, args.bench,
                             on_progress=lambda pct, name: progress.update(task, completed=pct, description=name))
    sync_claims(db, load_claims())
    paths = list(outcome.results)
    status = report_ingest(ingest(db, paths, sources(paths, outcome.sidecar)))
    print_table(db, machine.name)
    if not args.no_report:
        from proofbench.reports.render import render

        console.print(f"report: {render(db)}")
    return status


def print_table(db, machine_name: str) -> None:
    """The terminal summary: subject, variant, time, items/s, speedup, claim, verdict."""
    from rich.console import Console
    from rich.table import Table
    from sqlalchemy.orm import Session

    from proofbench.claim import load_claims
    from proofbench.reports import formatting as fmt
    from proofbench.reports.render import machine_views

    with Session(db) as session:
        claims = list(load_claims())
        views = [v for v in machine_views(session, claims) if v.machine.name == machine_name][-1:]
    table = Table(title=f"proofbench — {machine_name}")
    for column in ("subject", "size", "variant", "time", "items/s", "speedup [95% CI]", "claim", "verdict"):
        table.add_column(column)
    for view in views:
        for s in view.subjects:
            for v in s.variants:
                claim = next((c for c in claims if c.subject == s.subject and c.variant == v.variant), None)
                verdict = view.verdicts.get(claim.id) if claim else None
                table.add_row(s.subject, s.size, v.variant,
                              fmt.seconds(v.time.median) if v.time else v.status,
                              fmt.rate(v.items_per_second),
                              f"{fmt.factor(v.speedup.estimate)} {fmt.interval(v.speedup.low, v.speedup.high)}"
                              if v.speedup else ("" if v.status == "ok" else v.reason[:60]),
                              f"{claim.promise} ({claim.source[:3]})" if claim else "",
                              verdict.label if verdict else "")
    Console(width=None if sys.stdout.isatty() else 160).print(table)
