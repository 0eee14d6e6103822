"""asv's command line, with its benchmark discovery kept for later runs that start at the same commit.

Every `asv run` first discovers the suite: it installs the run's first commit and imports the
suite in a process of its own, before the processes that measure. A round of the nightly
check's confirmation, of the pull-request gate, or a bisection's measurement is one `asv run`
of two commits, so every round paid that import again: 1.8 s of a 7.3 s round on the 2-vCPU
VM (a suite importing torch), more where importing the suite starts heavier libraries.

`python -m proofbench.pipeline.discovery run ...` is `python -m asv run ...` where the
environment variable `KEPT` names a directory: a run discovers as asv does, with its first
commit, and keeps what it found there under that commit's hash; a later run that starts at the
same commit reads it instead of discovering. What a run measures with is then what asv would
have discovered for it (the suite and the environment do not change between the runs of one
re-measurement or one check), and nothing else changes: asv still builds, installs and measures
each commit. Which runs share a directory is `remeasure`'s to say (`fresh_discovery`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

KEPT = "PROOFBENCH_ASV_DISCOVERED"


def keep(discover, directory: Path):
    """`discover` (asv's `Benchmarks._disc_benchmarks`) answered from `directory` where an earlier
    run that started at the same commit kept its answer, else called and its answer kept there."""

    def discovered(conf, repo, environments, commit_hashes, check):
        if not commit_hashes:
            return discover(conf, repo, environments, commit_hashes, check)
        kept = directory / f"{commit_hashes[0]}.json"
        if kept.is_file():
            try:
                return json.loads(kept.read_text())
            except (OSError, ValueError):
                pass  # unreadable: discover again, as asv would
        found = discover(conf, repo, environments, commit_hashes, check)
        directory.mkdir(parents=True, exist_ok=True)
        partial = kept.with_name(kept.name + ".partial")
        partial.write_text(json.dumps(found))
        partial.replace(kept)  # whole or absent, never half-written
        return found

    return discovered


def main() -> None:
    """asv's command line, its discovery kept where `KEPT` names a directory."""
    from asv.benchmarks import Benchmarks
    from asv.main import main as asv_main

    kept = os.environ.get(KEPT)
    original = getattr(Benchmarks, "_disc_benchmarks", None)
    if kept and original is not None:  # an asv without it discovers every run, as before
        Benchmarks._disc_benchmarks = staticmethod(keep(original, Path(kept)))
    asv_main()  # exits with asv's status


if __name__ == "__main__":
    main()
