"""What an ingest did, in words for the terminal."""
from __future__ import annotations


def summary(report) -> str:
    """One line: files this ingest stored and the results they hold (a file asv rewrote, merging a
    run of some benchmarks into its commit's, is stored whole again), files already known (another
    process's included, when it stored one first), commits placed."""
    placed = f"; {report.placed} commit(s) placed on the branch's history" if report.placed else ""
    return (f"ingested {len(report.ingested)} file(s) holding {report.rows} result(s); "
            f"{len(report.unchanged)} file(s) already known{placed}")


def refusals(report) -> list[str]:
    """One line per refused file (naming it and what was wrong), then one per warning."""
    return [f"refused {line}" for line in report.refused] + [f"warning: {line}" for line in report.warnings]
