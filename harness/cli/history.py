"""`proofbench history`: measure a range of commits in asv's virtualenv environment, ingest."""
from __future__ import annotations

import argparse
from pathlib import Path

from proofbench.cli.common import (
    add_db_option,
    add_profile_option,
    engine,
    progress_bar,
    project,
    regenerate,
    say,
    show_ingest,
)


def add_parser(sub) -> None:
    parser = sub.add_parser("history", help="measure a range of commits (asv virtualenv), ingest them")
    parser.add_argument("range", nargs="?", default=None,
                        help="git range, e.g. HEAD~20..HEAD, or HASHFILE:PATH, a file of commits one a line (as "
                             "asv takes them: a job that measures every Nth commit lists them); default: the branch's "
                             "whole first-parent history; narrow it with --since")
    parser.add_argument("--since", metavar="DATE", help="only commits committed on or after DATE (git's --since)")
    parser.add_argument("--branch", default=None, help="the branch whose first-parent history orders the series "
                        "(default: asv.conf.json's first branch, else the current one)")
    parser.add_argument("--repo", type=Path, default=None, help="the repository to build at each commit (default: "
                        "asv.conf.json's `repo`)")
    add_profile_option(parser)
    parser.add_argument("--bench", metavar="SUBJECT|REGEX", help="only this subject (lmdb_read, loading.lmdb_read), "
                        "or the benchmarks whose name matches")
    parser.add_argument("--rerun", action="store_true", help="measure commits that already have results again")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep asv's environments, results and diagnostics under DIR (default: the project's)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.catalogue import load_catalogue
    from proofbench.machine.capture import capture
    from proofbench.pipeline import history
    from proofbench.pipeline.asv import Layout, building
    from proofbench.pipeline.generate import bench_pattern
    from proofbench.profile import get_profile

    found = project(args)
    layout = Layout.under(found, args.workdir) if args.workdir else Layout.of(found)
    repo = args.repo.resolve() if args.repo else history.repository(layout)
    branch = args.branch or history.default_branch(layout, repo)
    hashes = history.commits(repo, branch, args.range, args.since)
    if not hashes:  # a quiet week: nothing new to measure is no failure of a nightly job
        say(f"nothing to measure: {history.none_in(repo, branch, args.range, args.since)}")
        return 0
    profile = get_profile(args.profile, found.profiles)
    catalogue = load_catalogue(found)
    db = engine(args, found)
    with building(layout):  # the suite too: another command's asv reads it
        regenerate(catalogue, layout)
        say(f"{len(hashes)} commit(s) of {branch} ({hashes[0][:8]}..{hashes[-1][:8]}), profile "
            f"{profile.name}, asv environment {history.ENVIRONMENT}")
        with progress_bar("building environment") as update:
            measured = history.measure(db, layout, catalogue, hashes, profile, capture(), repo=repo, branch=branch,
                                       bench=bench_pattern(catalogue.registry, args.bench) if args.bench else None,
                                       rerun=args.rerun, on_progress=update)
    for commit in measured.outcome.failed_builds:
        say(f"{commit[:8]} did not build; its benchmarks are recorded as failed", style="yellow")
    for commit in measured.outcome.no_benchmark_ran():
        say(f"{commit[:8]}: no benchmark gave a measurement (each one's reason is in the report)", style="yellow")
    say(f"asv's output: {measured.outcome.log_path}")
    status = show_ingest(measured.ingested)
    say(f"environment: {measured.outcome.environment_dir} (kept for the next run)")
    return status
