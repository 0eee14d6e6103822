"""`proofbench generate`: write the suite's modules from the project's subjects."""
from __future__ import annotations

import argparse

from proofbench.cli.common import add_project_option, project, say


def add_parser(sub) -> None:
    parser = sub.add_parser("generate", help="write the suite's asv modules from the project's subjects")
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 2 if any)")
    add_project_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.catalogue import load_catalogue
    from proofbench.errors import InputError
    from proofbench.pipeline.asv import Layout
    from proofbench.pipeline.generate import generate

    found = project(args)
    catalogue = load_catalogue(found)
    layout = Layout.of(found)
    stale = generate(catalogue.registry, layout.benchmarks, check=args.check)
    for path in stale:
        say(f"{'stale' if args.check else 'wrote'} {path}")
    if args.check and stale:
        raise InputError(f"{layout.benchmarks} is stale: run `proofbench generate`")
    return 0
