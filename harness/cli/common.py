"""What several subcommands share: the --db option, the engine, the ingest sources, the console."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

console = Console(stderr=True)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """Every command that touches the database takes --db URL (else $PROOFBENCH_DB, else SQLite)."""
    parser.add_argument("--db", metavar="URL", help="SQLAlchemy database URL (default: $PROOFBENCH_DB or "
                        "db/proofbench.sqlite)")


def engine(args: argparse.Namespace):
    """An engine on the chosen database, migrated to the current schema."""
    from proofbench.db.session import connect

    return connect(getattr(args, "db", None))


def sources(paths: list[Path], sidecar_path: Path | None):
    """Everything ingest needs besides the results files themselves."""
    from proofbench.pipeline import runner
    from proofbench.pipeline.generate import benchmark_index
    from proofbench.pipeline.ingest import Sources, load_diagnostics, machine_profiles
    from proofbench.registry import load

    return Sources(index=benchmark_index(load()), diagnostics=load_diagnostics(sidecar_path),
                   repo=runner.ROOT, machine_profiles=machine_profiles(paths))


def report_ingest(report) -> int:
    """Print an ingest's outcome; 2 when a file was refused (each named on stderr)."""
    console.print(f"ingested {len(report.ingested)} file(s), {report.rows} result(s); "
                  f"{len(report.unchanged)} already known")
    for line in report.refused:
        print(f"proofbench: refused {line}", file=sys.stderr)
    return 2 if report.refused else 0
