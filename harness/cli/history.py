"""`proofbench history`: measure a range of commits in asv's virtualenv environment, ingest."""
from __future__ import annotations

import argparse
from pathlib import Path

from proofbench.cli.common import add_db_option, console, engine, report_ingest


def add_parser(sub) -> None:
    parser = sub.add_parser("history", help="measure a range of commits (asv virtualenv), ingest them")
    parser.add_argument("range", nargs="?", default=None,
                        help="git range, e.g. HEAD~20..HEAD (default: the branch's whole first-parent history; "
                             "narrow it with --since)")
    parser.add_argument("--since", metavar="DATE", help="only commits committed on or after DATE (git's --since)")
    parser.add_argument("--branch", default=None, help="the branch whose first-parent history orders the series "
                        "(default: asv.conf.json's first branch)")
    parser.add_argument("--repo", type=Path, default=None, help="the repository to measure (default: this project)")
    parser.add_argument("--profile", default=None, help="quick (default), full, gpu or smoke")
    parser.add_argument("--bench", metavar="REGEX", help="only benchmarks whose name matches")
    parser.add_argument("--rerun", action="store_true", help="measure commits that already have results again")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep asv's environments, results and diagnostics under DIR (default: .asv, or "
                        "$PROOFBENCH_WORKDIR)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from sqlalchemy.orm import Session

    from proofbench import git
    from proofbench.analysis import series
    from proofbench.claim import load_claims
    from proofbench.machine.capture import capture
    from proofbench.pipeline import history, runner
    from proofbench.pipeline.ingest import ingest, sync_claims
    from proofbench.profile import get_profile

    repo = (args.repo or runner.ROOT).resolve()
    branch = args.branch or history.default_branch(repo)
    hashes = history.commits(repo, branch, args.range, args.since)
    profile = get_profile(args.profile)
    layout = runner.Layout.under(args.workdir.resolve()) if args.workdir else runner.Layout.default()
    db = engine(args)
    console.print(f"{len(hashes)} commit(s) of {branch} ({hashes[0][:8]}..{hashes[-1][:8]}), profile "
                  f"[bold]{profile.name}[/], asv environment {history.ENVIRONMENT}")
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("building environment", total=100)
        outcome = history.run(hashes, profile, capture(), repo=repo, branch=branch, bench=args.bench,
                              rerun=args.rerun, layout=layout,
                              on_progress=lambda pct, name: progress.update(task, completed=pct, description=name))
    for commit in outcome.failed_builds:
        console.print(f"[yellow]{commit[:8]} did not build; its benchmarks are recorded as failed")
    sync_claims(db, load_claims())
    paths = list(outcome.results)
    status = report_ingest(ingest(db, paths, _sources(paths, layout, repo)))
    with Session(db) as session, session.begin():
        series.place(session, git.first_parent(repo, branch), branch)
    console.print(f"environment: {outcome.environment_dir} (kept for the next run)")
    return status


def _sources(paths: list[Path], layout, repo: Path):
    from proofbench.pipeline.generate import benchmark_index
    from proofbench.pipeline.ingest import Sources, load_diagnostics, machine_profiles
    from proofbench.registry import load

    return Sources(index=benchmark_index(load()), diagnostics=load_diagnostics(layout.sidecar), repo=repo,
                   machine_profiles=machine_profiles(paths))
