"""`proofbench ingest`: take asv results files into the database."""
from __future__ import annotations

import argparse
from pathlib import Path

from proofbench.cli.common import add_db_option, engine, report_ingest, sources


def add_parser(sub) -> None:
    parser = sub.add_parser("ingest", help="take asv results files into the database")
    parser.add_argument("paths", nargs="*", type=Path, help="results files or directories (default: .asv/results)")
    parser.add_argument("--sidecar", type=Path, default=None, help="diagnostics file (default: .asv/sidecar.jsonl)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def expand(paths: list[Path]) -> list[Path]:
    """Results files named directly or found under directories."""
    from proofbench.errors import InputError
    from proofbench.pipeline import results_file

    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(results_file.find(path))
        elif path.exists():
            out.append(path)
        else:
            raise InputError(f"{path}: no such results file or directory")
    return out


def handle(args: argparse.Namespace) -> int:
    from proofbench.claim import load_claims
    from proofbench.pipeline import runner
    from proofbench.pipeline.ingest import ingest, sync_claims

    paths = expand(args.paths or [runner.RESULTS_DIR])
    db = engine(args)
    sync_claims(db, load_claims())
    return report_ingest(ingest(db, paths, sources(paths, args.sidecar or runner.SIDECAR)))
