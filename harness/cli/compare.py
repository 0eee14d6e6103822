"""`proofbench compare A B`: two machines side by side, as a text table, JSON or an HTML page;
`proofbench compare A --devices cpu cuda`: one machine's CPU results beside its CUDA results."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from proofbench.cli.common import add_db_option, engine, optional_project, say
from proofbench.errors import InputError

FORMATS = ("text", "json", "html")
DEVICES = ("cpu", "cuda")


def add_parser(sub) -> None:
    parser = sub.add_parser("compare", help="compare two machines: each one's speedups side by side, and the "
                            "throughput ratio between them, with 95%% intervals; plain asv benchmarks by the "
                            "ratio of the two values asv recorded at one commit (no interval: one value each)")
    parser.add_argument("machine_a", metavar="MACHINE_A", help="machine name (or NAME@FINGERPRINT)")
    parser.add_argument("machine_b", metavar="MACHINE_B", nargs="?",
                        help="machine name (or NAME@FINGERPRINT); left out with --devices")
    parser.add_argument("--devices", nargs=2, choices=DEVICES, metavar="DEVICE",
                        help="compare MACHINE_A's results of two devices side by side: the run profiles on the "
                        "first against those on the second (e.g. --devices cpu cuda)")
    parser.add_argument("--commit", metavar="REV", help="commit to compare at (hash prefix or git revision; "
                        "default: each machine's latest)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or html")
    parser.add_argument("--out", type=Path, help="write to this file instead of standard output")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.reports import compare as shown
    from proofbench.reports.output import claim_file

    found = optional_project(args)
    _machines(args)
    if args.out:
        claim_file(args.out)
    with Session(engine(args, found, write=False, create=False)) as session:
        comparison = _compared(session, args, found)
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


def _compared(session, args: argparse.Namespace, found):
    from proofbench.analysis.hardware import compare, compare_devices
    from proofbench.profile import profiles

    repo = found.root if found is not None else None
    if args.devices:
        known = profiles(found.profiles if found is not None else None)
        return compare_devices(session, args.machine_a, tuple(args.devices), known, args.commit, repo=repo)
    return compare(session, args.machine_a, args.machine_b, args.commit, repo=repo)


def _machines(args: argparse.Namespace) -> None:
    # the machines named as the comparison asks, before any database is opened
    if args.devices and args.machine_b is not None:
        raise InputError(f"--devices compares one machine's devices: give one machine, not "
                         f"{args.machine_a!r} and {args.machine_b!r}")
    if not args.devices and args.machine_b is None:
        raise InputError("compare: give two machines (MACHINE_A MACHINE_B), or one with --devices cpu cuda")
