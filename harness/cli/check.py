"""`proofbench check`: the nightly regression check over the database.

Exit status: 0 no new regression, 1 a regression found, 2 an error (also printed as JSON
with --format json). The JSON format is documented in docs/nightly.md.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from proofbench.cli.common import add_db_option

FORMATS = ("text", "json", "markdown")


def add_parser(sub) -> None:
    parser = sub.add_parser("check", help="report new regressions and improvements since the last check")
    parser.add_argument("--since", metavar="REV|DATE", help="only changes starting at this commit or date (YYYY-MM-DD) "
                        "or later")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or markdown")
    parser.add_argument("--branch", default=None, help="the branch whose series are checked (default: asv.conf.json's "
                        "first branch)")
    parser.add_argument("--repo", type=Path, default=None, help="git checkout used to order commits (default: this "
                        "project)")
    parser.add_argument("--no-git", action="store_true", help="use the commit order already in the database")
    parser.add_argument("--fail-on", choices=("new", "open"), default="new",
                        help="exit 1 for new regressions (default) or for any open one")
    parser.add_argument("--no-record", action="store_true",
                        help="look without recording this check (the next one still sees the same alerts as new)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.analysis import check
    from proofbench.cli.common import engine
    from proofbench.errors import ProofbenchError
    from proofbench.pipeline import history, runner

    repo = (args.repo or runner.ROOT).resolve()
    try:
        report = check.run_check(engine(args), args.branch or history.default_branch(repo), since=args.since,
                                 repo=None if args.no_git else repo, record=not args.no_record,
                                 fail_on=args.fail_on)
    except ProofbenchError as exc:
        if args.format == "json":
            print(json.dumps(check.error_json(str(exc)), indent=2))
        raise
    if args.format == "json":
        print(json.dumps(check.to_json(report), indent=2))
    else:
        print(markdown(report) if args.format == "markdown" else text(report))
    return report.exit_code


def _level(value: float, unit: str) -> str:
    from proofbench.reports import formatting as fmt

    if unit == "seconds":
        return fmt.seconds(value)
    if unit == "bytes":
        return fmt.byte_size(value)
    return f"{value:.4g} {unit}"


def _series(f) -> str:
    params = ", ".join(f"{k}={v}" for k, v in f.params.items())
    return f"{f.benchmark} ({params}) on {f.machine}, {f.environment}"


def _change(f) -> str:
    return (f"{_level(f.before, f.unit)} -> {_level(f.after, f.unit)} (x{f.ratio:.3g}, "
            f"{f.ratio - 1:+.1%}), p={f.p_value:.2g}")


def _heading(report) -> str:
    previous = f"previous check #{report.previous_check[0]} at {report.previous_check[1]}" \
        if report.previous_check else "first check"
    since = f", since {report.since}" if report.since else ""
    return f"proofbench check: branch {report.branch}{since}, {report.series} series, {previous}"


def _totals(report) -> str:
    resolved = sum(1 for f in report.findings if f.state == "resolved")
    return (f"{report.count('new', True)} new regression(s), {report.count('new', False)} new improvement(s), "
            f"{report.count('open', True)} regression(s) still open, {resolved} resolved"
            + ("" if report.recorded else " (not recorded)"))


def text(report) -> str:
    """The terminal report: one block per alert, new ones first."""
    lines = [_heading(report)]
    for f in report.findings:
        lines.append(f"{f.state.upper():9} {f.kind:11} {_series(f)}")
        lines.append(f"    starts at {f.commit.short} {f.commit.subject!r} (position {f.commit.position}); "
                     f"{_change(f)}")
        if f.resolved_at:
            lines.append(f"    level back at {f.resolved_at.short} {f.resolved_at.subject!r}")
    lines.append(_totals(report))
    return "\n".join(lines)


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown(report) -> str:
    """The report as a Markdown table, for a pull request or an issue comment."""
    lines = [f"### {_heading(report)}", "", _totals(report), ""]
    if report.findings:
        lines += ["| state | kind | series | commit | before | after | ratio | p |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for f in report.findings:
            lines.append("| " + " | ".join(_cell(c) for c in (
                f.state, f.kind, _series(f), f"`{f.commit.short}` {f.commit.subject}", _level(f.before, f.unit),
                _level(f.after, f.unit), f"x{f.ratio:.3g}", f"{f.p_value:.2g}")) + " |")
    return "\n".join(lines)
