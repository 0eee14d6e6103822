"""`proofbench report`: render the static HTML site from the database."""
from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path

from proofbench.cli.common import add_db_option, engine, optional_project


def add_parser(sub) -> None:
    parser = sub.add_parser("report", help="render the HTML site from the database")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: the project's `site`)")
    parser.add_argument("--open", action="store_true", help="print the index path and open it in a browser")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.project import fallback_workdir
    from proofbench.reports.render import render

    found = optional_project(args)
    measured = engine(args, found, write=False, create=False)
    out = args.out or (found.site if found is not None else fallback_workdir() / "site")
    index = render(measured, out)
    print(index)
    if args.open:
        webbrowser.open(index.as_uri())
    return 0
