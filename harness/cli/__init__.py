"""The `proofbench` command line. The one place errors become exit codes.

0  done, nothing wrong
1  `check` found a regression
2  a usage or input error (one line naming the file, field or value), or a refused file
"""
from __future__ import annotations

import argparse
import sys

from proofbench.cli import (
    calibrate,
    check,
    compare,
    db,
    generate,
    history,
    ingest,
    machine,
    profile,
    report,
    run,
)
from proofbench.errors import ProofbenchError

COMMANDS = (run, history, check, ingest, report, compare, machine, calibrate, profile, generate, db)

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand (one module each under harness/commands)."""
    parser = argparse.ArgumentParser(prog="proofbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `proofbench` script."""
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ProofbenchError as exc:
        print(f"proofbench: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("proofbench: interrupted; everything ingested before the interrupt is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
