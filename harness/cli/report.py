"""`proofbench report`: render the static HTML site from the database."""
from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path

from proofbench.cli.common import add_db_option, engine


def add_parser(sub) -> None:
    parser = sub.add_parser("report", help="render the HTML site from the database")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: reports/site)")
    parser.add_argument("--open", action="store_true", help="print the index path and open it in a browser")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.claim import load_claims
    from proofbench.pipeline.ingest import sync_claims
    from proofbench.reports.render import SITE_DIR, render

    db = engine(args)
    sync_claims(db, load_claims())
    index = render(db, args.out or SITE_DIR)
    print(index)
    if args.open:
        webbrowser.open(index.as_uri())
    return 0
