"""What each `proofbench` subcommand does; `harness.cli` parses and maps errors to exit codes."""
from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.orm import Session

from harness import runner
from harness.claim import load_claims
from harness.errors import InputError
from harness.generate import benchmark_index, generate
from harness.ingest import IngestReport, Sources, ingest, load_diagnostics, machine_profiles, sync_claims
from harness.profile import get_profile
from harness.registry import load
from harness import results_file

console = Console(stderr=True)


def _engine(args: argparse.Namespace):
    from db.session import connect

    return connect(getattr(args, "db", None))


def _sources(sidecar_path: Path | None) -> Sources:
    return Sources(index=benchmark_index(load()), diagnostics=load_diagnostics(sidecar_path),
                   repo=runner.ROOT, machine_profiles=machine_profiles(runner.RESULTS_DIR))


def _report_ingest(report: IngestReport) -> int:
    console.print(f"ingested {len(report.ingested)} file(s), {report.rows} result(s); "
                  f"{len(report.unchanged)} already known")
    for line in report.refused:
        print(f"proofbench: refused {line}", file=sys.stderr)
    return 2 if report.refused else 0


def cmd_generate(args: argparse.Namespace) -> int:
    stale = generate(load(), check=args.check)
    for path in stale:
        console.print(f"{'stale' if args.check else 'wrote'} {path.relative_to(runner.ROOT)}")
    if args.check and stale:
        raise InputError("benchmarks/ is stale: run `proofbench generate`")
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    from db.session import engine_for, has_schema, masked, database_url, upgrade

    engine = engine_for(args.db)
    existed = has_schema(engine)
    upgrade(engine)
    console.print(f"{'upgraded' if existed else 'created'} schema at {masked(database_url(args.db))}")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    paths = _expand(args.paths or [runner.RESULTS_DIR])
    engine = _engine(args)
    sync_claims(engine, load_claims())
    return _report_ingest(ingest(engine, paths, _sources(args.sidecar or runner.SIDECAR)))


def _expand(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(results_file.find(path))
        elif path.exists():
            out.append(path)
        else:
            raise InputError(f"{path}: no such results file or directory")
    return out


def cmd_report(args: argparse.Namespace) -> int:
    from reports.render import SITE_DIR, render

    engine = _engine(args)
    sync_claims(engine, load_claims())
    index = render(engine, args.out or SITE_DIR)
    print(index)
    if args.open:
        webbrowser.open(index.as_uri())
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from harness.machine import capture

    profile = get_profile(args.profile)
    registry = load()
    for path in generate(registry):
        console.print(f"[yellow]regenerated {path.relative_to(runner.ROOT)} (commit it for runs across commits)")
    engine = _engine(args)
    machine = capture()
    console.print(f"profile [bold]{profile.name}[/]: {profile.description} (device {profile.device}, "
                  f"{profile.torch_threads} torch thread(s))")
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("starting asv", total=100)
        outcome = runner.run(profile, machine, args.bench,
                             on_progress=lambda pct, name: progress.update(task, completed=pct, description=name))
    sync_claims(engine, load_claims())
    status = _report_ingest(ingest(engine, list(outcome.results), _sources(outcome.sidecar)))
    print_table(engine, machine.name)
    if not args.no_report:
        from reports.render import render

        console.print(f"report: {render(engine)}")
    return status


def print_table(engine, machine_name: str) -> None:
    """The terminal summary: subject, variant, time, items/s, speedup, claim, verdict."""
    from reports import formatting as fmt
    from reports.render import machine_views

    with Session(engine) as session:
        claims = list(load_claims())
        views = [v for v in machine_views(session, claims) if v.machine.name == machine_name][-1:]
    table = Table(title=f"proofbench — {machine_name}", show_lines=False)
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
    Console().print(table)


HANDLERS = {"run": cmd_run, "ingest": cmd_ingest, "report": cmd_report, "generate": cmd_generate, "db": cmd_db}
