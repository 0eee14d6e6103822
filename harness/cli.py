"""The `proofbench` command line. The one place errors become exit codes.

0  done, nothing wrong
1  `check` found a regression
2  a usage or input error (one line naming the file, field or value), or a refused file
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import ProofbenchError

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2


def _db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", help="SQLAlchemy database URL (default: $PROOFBENCH_DB or "
                        "db/proofbench.sqlite)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="proofbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="measure a profile on the checkout in hand, ingest, report")
    run.add_argument("--profile", default=None, help="quick (default), full, gpu or smoke")
    run.add_argument("--bench", metavar="REGEX", help="only benchmarks whose name matches")
    run.add_argument("--no-report", action="store_true", help="skip rendering the HTML site")
    _db_option(run)

    ingest = sub.add_parser("ingest", help="take asv results files into the database")
    ingest.add_argument("paths", nargs="*", type=Path, help="results files or directories (default: .asv/results)")
    ingest.add_argument("--sidecar", type=Path, default=None, help="diagnostics file (default: .asv/sidecar.jsonl)")
    _db_option(ingest)

    report = sub.add_parser("report", help="render the HTML site from the database")
    report.add_argument("--out", type=Path, default=None, help="output directory (default: reports/site)")
    report.add_argument("--open", action="store_true", help="print the index path and open it in a browser")
    _db_option(report)

    generate = sub.add_parser("generate", help="write benchmarks/*.py from the subject registry")
    generate.add_argument("--check", action="store_true", help="only report stale files (exit 2 if any)")

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply schema migrations")
    _db_option(upgrade)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `proofbench` script."""
    args = build_parser().parse_args(argv)
    from harness import commands  # imported here so `--help` stays instant

    try:
        return commands.HANDLERS[args.command](args)
    except ProofbenchError as exc:
        print(f"proofbench: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("proofbench: interrupted; everything ingested before the interrupt is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
