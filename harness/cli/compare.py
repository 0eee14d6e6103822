"""`proofbench compare A B`: two machines side by side, as a text table, JSON or an HTML page."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from proofbench.cli.common import add_db_option, engine, optional_project, say

FORMATS = ("text", "json", "html")


def add_parser(sub) -> None:
    parser = sub.add_parser("compare", help="compare two machines: each one's speedups side by side, and the "
                            "throughput ratio between them, with 95%% intervals")
    parser.add_argument("machine_a", metavar="MACHINE_A", help="machine name (or NAME@FINGERPRINT)")
    parser.add_argument("machine_b", metavar="MACHINE_B", help="machine name (or NAME@FINGERPRINT)")
    parser.add_argument("--commit", metavar="REV", help="commit to compare at (hash prefix or git revision; "
                        "default: each machine's latest)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or html")
    parser.add_argument("--out", type=Path, help="write to this file instead of standard output")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.analysis.hardware import compare
    from proofbench.reports import compare as shown
    from proofbench.reports.output import claim_file

    found = optional_project(args)
    if args.out:
        claim_file(args.out)
    with Session(engine(args, found, write=False)) as session:
        comparison = compare(session, args.machine_a, args.machine_b, args.commit,
                             repo=found.root if found is not None else None)
        if args.format == "html":
            output = shown.html(comparison, site=found.site if found is not None else None, out=args.out)
        else:
            output = {"text": shown.text, "json": shown.as_json_text}[args.format](comparison)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(output)
        say(f"wrote {args.out}")
    else:
        sys.stdout.write(output)
    return 0
