"""`proofbench check`: the nightly regression check over the database.

Exit status: 0 no new regression, 1 a regression found, 2 an error (also printed as JSON
with --format json). The JSON format is documented in docs/nightly.md.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from proofbench.cli.common import add_db_option, engine, error_line, optional_project

FORMATS = ("text", "json", "markdown")


def add_parser(sub) -> None:
    parser = sub.add_parser("check", help="report new regressions and improvements since the last check")
    parser.add_argument("--since", metavar="REV|DATE", help="only changes starting at this commit or date (YYYY-MM-DD) "
                        "or later")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or markdown")
    parser.add_argument("--branch", default=None, help="the branch whose series are checked (default: asv.conf.json's "
                        "first branch, else the repository's current branch)")
    parser.add_argument("--repo", type=Path, default=None, help="git checkout whose first-parent history orders the "
                        "commits (default: the repository the project's asv.conf.json builds, when it is a local checkout; "
                        "without one, commits are ordered by the dates in their results)")
    parser.add_argument("--no-git", action="store_true", help="use the commit order already in the database (the "
                        "branch's placed commits, else the results' dates)")
    parser.add_argument("--fail-on", choices=("new", "open"), default="new",
                        help="exit 1 for new regressions (default) or for any open one")
    parser.add_argument("--no-record", action="store_true",
                        help="look without recording this check (the next one still sees the same alerts as new)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.analysis import check
    from proofbench.db.session import read_only, scratch_copy
    from proofbench.errors import ProofbenchError
    from proofbench.reports import check as shown

    try:
        found = optional_project(args)
        repo, branch = _repository(args, found)
        db = engine(args, found, write=not args.no_record)
        if read_only(db):  # --no-record writes only what it throws away: into a copy
            db = scratch_copy(db)
        report = check.run_check(db, branch, since=args.since, repo=None if args.no_git else repo,
                                 record=not args.no_record, fail_on=args.fail_on,
                                 settings=found.check if found is not None else None)
    except Exception as exc:  # noqa: BLE001 - a bot reading --format json always gets an object
        if args.format == "json":
            code = exc.exit_code if isinstance(exc, ProofbenchError) else 3
            print(json.dumps(shown.error_json(error_line(exc, args), exit_code=code), indent=2))
        raise
    if args.format == "json":
        print(json.dumps(shown.to_json(report), indent=2))
    else:
        print(shown.markdown(report) if args.format == "markdown" else shown.text(report))
    return report.exit_code


def _repository(args: argparse.Namespace, found) -> tuple[Path | None, str]:
    # --repo, else the local repository the project's asv configuration builds; the branch it tracks
    from proofbench import git
    from proofbench.errors import InputError
    from proofbench.pipeline import history
    from proofbench.pipeline.asv import Layout

    layout = Layout.of(found) if found is not None else None
    repo = args.repo.resolve() if args.repo else None
    if repo is None and layout is not None:
        try:
            repo = history.repository(layout)
        except InputError:
            repo = None  # asv builds from a URL: no checkout here, so the results' dates order
    if args.branch:
        return repo, args.branch
    if layout is not None and repo is not None:
        return repo, history.default_branch(layout, repo)
    return repo, (git.current_branch(repo) if repo else None) or "main"
