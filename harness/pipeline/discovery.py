"""asv's command line, with its benchmark discovery kept for the runs of one re-measurement.

Every `asv run` first discovers the suite: it installs the run's first commit and imports the
suite in a process of its own, before the processes that measure. A round of the nightly
check's confirmation, of the pull-request gate, or a bisection's measurement is one `asv run`
of two commits, so each round after the first paid that import again: 1.8 s of a 7.3 s round
on the 2-vCPU VM (a suite importing torch), more where importing the suite starts heavier
libraries.

`python -m proofbench.pipeline.discovery run ...` is `python -m asv run ...` where the
environment variable `KEPT` names a file: the first run discovers as asv does and keeps what it
found there; later runs read it instead of discovering. What asv assumes within one run (the
suite found with its first commit serves every commit of the run) then holds across the runs
that share the file, and nothing else changes: asv still builds, installs and measures each
commit. The rounds of one re-measurement share a file (`remeasure.alternate`), and so do the
measurements of one `remeasure.Bench` (a check's bisections); each starts without one
(`remeasure.fresh_discovery`).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

KEPT = "PROOFBENCH_ASV_DISCOVERED"


def keep(discover, kept: Path):
    """`discover` (asv's `Benchmarks._disc_benchmarks`, called as (conf, repo, environments,
    commit_hashes, check)) answered from `kept` where an earlier run wrote it, else called and
    its answer written there."""

    def discovered(*args, **kwargs):
        if kept.is_file():
            try:
                return json.loads(kept.read_text())
            except (OSError, ValueError):
                pass  # unreadable: discover again, as asv would
        found = discover(*args, **kwargs)
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial = kept.with_name(kept.name + ".partial")
        partial.write_text(json.dumps(found))
        partial.replace(kept)  # whole or absent, never half-written
        return found

    return discovered


def main() -> None:
    """asv's command line, discovery kept where `KEPT` names a file."""
    from asv.benchmarks import Benchmarks
    from asv.main import main as asv_main

    kept = os.environ.get(KEPT)
    original = getattr(Benchmarks, "_disc_benchmarks", None)
    if kept and original is not None:  # an asv without it discovers every run, as before
        Benchmarks._disc_benchmarks = staticmethod(keep(original, Path(kept)))
    sys.exit(asv_main())


if __name__ == "__main__":
    main()
