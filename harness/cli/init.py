"""`proofbench init`: set the repository in hand up for proofbench; asks nothing, overwrites nothing."""
from __future__ import annotations

import argparse
from pathlib import Path

from proofbench.cli.common import say


def add_parser(sub) -> None:
    parser = sub.add_parser("init", help="write proofbench.toml (and asv.conf.json and a subjects module where "
                            "there are none) into a git repository; never overwrites")
    parser.add_argument("directory", nargs="?", type=Path, default=Path("."), help="the repository (default: here)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.pipeline.scaffold import init

    for item in init(args.directory):
        say(_done(item))
    say("next: declare your subjects in the subjects module, then `proofbench run`")
    return 0


def _done(item) -> str:
    # one line per file, its path whole (copied from the terminal)
    if item.added:
        return f"added {', '.join(item.added)} to {item.path}"
    if item.table:
        return f"kept  the [tool.proofbench] table of {item.path}"
    if item.left:
        return (f"kept  {item.path}, a symbolic link init writes nothing through: "
                f"add {', '.join(item.left)} to it yourself")
    return f"{'wrote' if item.written else 'kept '} {item.path}"
