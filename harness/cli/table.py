"""`proofbench table`: the run table for the newest results of each machine, for a person or a script.

`--format json` prints the documented, versioned document (`proofbench.reports.table`): one record
per subject, size, variant and machine, with the speedup, its interval and its word (faster,
slower, no significant difference, inconclusive).

An unknown `--machine`, or a database with no speedups to show (no results, or a plain asv
suite's only), is an error (exit 2) that says which, never an empty table that passes: as a
check of a database with no results is.
"""
from __future__ import annotations

import argparse
import json

from proofbench.cli.common import add_db_option, engine, optional_project
from proofbench.errors import InputError

FORMATS = ("text", "json", "markdown")


def add_parser(sub) -> None:
    parser = sub.add_parser("table", help="print the newest figures of each machine (text, json or markdown)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or markdown")
    parser.add_argument("--machine", default=None, help="only this machine (name, or NAME@FINGERPRINT)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.reports import table

    db = engine(args, optional_project(args), write=False, create=False)
    found = table.lines(db, machine=args.machine)
    if not found:
        raise InputError(table.nothing_shown(db, args.machine))
    if args.format == "json":
        print(json.dumps(table.as_json(found), indent=2))
    elif args.format == "markdown":
        print(table.markdown(found))
    else:
        table.print_text(found)
    return 0
