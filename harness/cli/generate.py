"""`proofbench generate`: write benchmarks/*.py from the subject registry."""
from __future__ import annotations

import argparse

from proofbench.cli.common import console


def add_parser(sub) -> None:
    parser = sub.add_parser("generate", help="write benchmarks/*.py from the subject registry")
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 2 if any)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.errors import InputError
    from proofbench.pipeline.generate import generate
    from proofbench.registry import load

    stale = generate(load(), check=args.check)
    for path in stale:
        console.print(f"{'stale' if args.check else 'wrote'} {path}")
    if args.check and stale:
        raise InputError("benchmarks/ is stale: run `proofbench generate`")
    return 0
