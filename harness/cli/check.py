"""`proofbench check`: the nightly regression check over the database.

Exit status: 0 no new regression, 1 a regression found, 2 an error (also printed as JSON
with --format json). The JSON format is documented in docs/nightly.md.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
from pathlib import Path

from proofbench.analysis.budget import BISECT_BUDGET, CONFIRM_BUDGET, Pace
from proofbench.cli.common import add_db_option, answer, engine, failure, optional_project

FORMATS = ("text", "json", "markdown")


def add_parser(sub) -> None:
    parser = sub.add_parser("check", help="report new regressions and improvements since the last check")
    parser.add_argument("--since", metavar="REV|DATE", help="only changes starting at this commit or date (YYYY-MM-DD) "
                        "or later")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or markdown")
    parser.add_argument("--branch", default=None, help="the branch whose series are checked (default: asv.conf.json's "
                        "first branch, else the repository's current branch)")
    parser.add_argument("--repo", type=Path, default=None, help="git checkout whose first-parent history orders the "
                        "commits (default: the repository the project's asv.conf.json builds, when it is a local "
                        "checkout; without one, commits are ordered by the dates in their results)")
    parser.add_argument("--no-git", action="store_true", help="use the commit order already in the database (the "
                        "branch's placed commits, else the results' dates)")
    parser.add_argument("--fail-on", choices=("new", "open"), default="new",
                        help="exit 1 for new regressions (default) or for any open one")
    parser.add_argument("--no-record", action="store_true",
                        help="look without recording this check (the next one still sees the same alerts as new)")
    parser.add_argument("--no-confirm", action="store_true", help="do not measure suspected steps again (they stay "
                        "suspected until the history decides them)")
    parser.add_argument("--confirm-budget", type=float, default=CONFIRM_BUDGET, metavar="SECONDS",
                        help=f"most seconds spent measuring suspected steps again (default {CONFIRM_BUDGET:g})")
    parser.add_argument("--confirm-rounds", type=int, default=6, metavar="N",
                        help="alternating rounds of the commit before and after a suspected step (default 6)")
    parser.add_argument("--bisect", action="store_true", help="find each new regression's first bad commit among "
                        "the commits no run measured (see proofbench bisect)")
    parser.add_argument("--bisect-budget", type=float, default=BISECT_BUDGET, metavar="SECONDS",
                        help=f"most seconds spent bisecting new regressions, larger steps first (default "
                        f"{BISECT_BUDGET:g}); where it runs out a bisection gives the range it narrowed the step to, "
                        "if its check holds")
    parser.add_argument("--profile", default=None, help="the profile re-measurements and bisections run with "
                        "(default: the one each series' newest result was measured with)")
    parser.add_argument("--markdown-out", type=Path, default=None, metavar="PATH",
                        help="also write this check's Markdown view to PATH (a nightly job's summary beside its "
                        "JSON, from one check: each suspected step measured once)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.analysis import check
    from proofbench.db.session import read_only, scratch_copy
    from proofbench.errors import ProofbenchError
    from proofbench.reports import check as shown
    from proofbench.reports.output import claim_file

    claimed, report = False, None  # --markdown-out may be written: never a file it refuses
    try:
        if args.markdown_out is not None:
            claim_file(args.markdown_out, "--markdown-out")
            claimed = True
        found = optional_project(args)
        repo, branch = _repository(args, found)
        db = engine(args, found, write=not args.no_record, create=False)
        if args.no_record and db.url.get_backend_name() == "sqlite" or read_only(db):
            db = scratch_copy(db)  # --no-record writes only what it throws away: into a copy, beside any writer
        with contextlib.ExitStack() as held:
            report = check.run_check(db, branch, since=args.since, repo=None if args.no_git else repo,
                                     record=not args.no_record, fail_on=args.fail_on,
                                     settings=found.check if found is not None else None,
                                     confirming=_confirming(args, found, _measured_with(args, db), held))
        if args.markdown_out is not None:
            _write(args.markdown_out, shown.markdown(report) + "\n")
    except (Exception, KeyboardInterrupt) as exc:  # an interrupted check says so in its files too
        code, line = failure(exc, args, shown, report.check_id if report is not None and report.recorded else None)
        if claimed:  # a job publishing the file must not publish an earlier night's check as tonight's
            with contextlib.suppress(ProofbenchError):
                _write(args.markdown_out, shown.error_markdown(line, exit_code=code) + "\n")
        raise
    return answer(report, args, shown)


def _write(path: Path, text: str) -> None:
    # the Markdown view beside the printed one; a path that cannot be written is one line
    from proofbench.errors import InputError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--markdown-out {path}: cannot write: {exc.strerror}") from None


def _measured_with(args: argparse.Namespace, db) -> dict[tuple[str, str, str], str]:
    # the profile each series was measured with, where it may be measured again without --profile
    # (read before the check, whose session holds the database's write lock)
    from sqlalchemy.orm import Session

    from proofbench.analysis.series import measured_with

    if args.profile is not None or (args.no_confirm and not args.bisect):
        return {}
    with Session(db) as session:
        return measured_with(session)


def _confirming(args: argparse.Namespace, found, stored: dict[tuple[str, str, str], str],
                held: contextlib.ExitStack):
    # How suspected steps are measured again (and new regressions bisected): on this machine,
    # with the project's suite and repository, at --profile, else the profile each series was
    # measured with (`stored`); where either is missing each suspect says why. The project's asv
    # environments are held from the first suspect's suite to the check's end (`held`).
    from proofbench.analysis import bisect
    from proofbench.analysis.confirm import Confirming, Rounds
    from proofbench.cli.common import bench, measuring
    from proofbench.errors import InputError, ProofbenchError, RunError, brief
    from proofbench.machine.capture import capture
    from proofbench.pipeline.remeasure import Target

    if args.confirm_rounds < 1 or not args.confirm_budget >= 0 or not args.bisect_budget >= 0:  # NaN is neither
        raise InputError(f"--confirm-rounds must be at least 1 and --confirm-budget and --bisect-budget not "
                         f"negative, got {args.confirm_rounds}, {args.confirm_budget:g} and {args.bisect_budget:g}")

    @functools.cache
    def here():  # this machine, captured the first time a suspect needs it
        return capture()

    @functools.cache
    def suite(profile: str | None):  # the suite at a profile, made the first time a suspect needs it
        if found is None:
            return "no proofbench.toml here: no suite to measure"
        try:
            held.enter_context(measuring(found))  # once: later holds nest
            return bench(found, profile, here())
        except (InputError, RunError) as exc:
            return f"cannot measure here: {brief(str(exc))}"

    def profile_of(machine: str, benchmark: str, keys: tuple[str, ...]) -> str | None:
        return args.profile or next((stored[machine, benchmark, k] for k in keys if (machine, benchmark, k) in stored),
                                    None)

    def remeasure(machine: str, benchmark: str, keys: tuple[str, ...], before: str, after: str, budget: float):
        if machine != here().name:
            return (f"measured on machine {machine!r}; only this machine's ({here().name!r}) series are measured "
                    f"again here")
        ready = suite(profile_of(machine, benchmark, keys))
        if isinstance(ready, str):
            return ready
        targets = [Target.of(benchmark, key) for key in keys]
        try:
            got = ready.pair(targets, before, after, rounds=args.confirm_rounds, budget=budget)
        except ProofbenchError as exc:  # asv could not run here: the suspect says why, the check goes on
            return f"could not measure again: {brief(str(exc))}"
        return {key: Rounds(before, after, tuple(got.series(before, target)), tuple(got.series(after, target)),
                            got.seconds, got.stopped) for key, target in zip(keys, targets)}

    paces: dict[str, Pace] = {}  # a benchmark's, for all its bisections tonight: a build one saw, the next may not

    def locate(session, alert, seconds):
        ready = suite(profile_of(alert.machine.name, alert.benchmark.name, (alert.params_key,)))
        if isinstance(ready, str):
            raise RunError(ready)
        return bisect.locate(session, alert, ready, budget=seconds, pace=paces.setdefault(alert.benchmark.name, Pace()))

    return Confirming(None if args.no_confirm else remeasure, args.confirm_budget, locate if args.bisect else None,
                      args.bisect_budget)


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
