"""Measures the checkout in hand: asv's `existing` environment, the project's own suite.

The run uses the Python running proofbench (where the project is installed) with
`--set-commit-hash HEAD` so results are stored per commit, `--record-samples` so raw samples
exist, and the forkserver launcher so `import torch` is paid once, not once per benchmark
process. Why a benchmark that hung or was killed failed is read from asv's output and appended
to the diagnostics (`asv_log.from_asv_log`). Ctrl-C or SIGTERM stops asv and every process it
started (`asv.drive`): nothing of the interrupted run is ingested.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from proofbench import git
from proofbench.catalogue import Catalogue
from proofbench.errors import RunError
from proofbench.machine.capture import MachineProfile, fingerprint, write_asv_machine_file
from proofbench.measure import sidecar
from proofbench.measure.bench import MEMORY_LIMIT_VAR, memory_limit
from proofbench.pipeline import asv_log
from proofbench.pipeline.asv import Layout, Progress, drive, environment, oom_kills
from proofbench.pipeline.ingest import IngestReport, ingest_run
from proofbench.profile import Profile


@dataclass(frozen=True)
class RunOutcome:
    """What one asv run left behind."""

    returncode: int
    commit: str
    machine: str
    results: tuple[Path, ...]
    sidecar: Path
    log: str


def write_machine_files(profile: MachineProfile, layout: Layout) -> None:
    """asv's ~/.asv-machine.json (kept under the work directory) and the full profile beside it."""
    layout.home.mkdir(parents=True, exist_ok=True)
    write_asv_machine_file(profile, layout.home / ".asv-machine.json")
    layout.machines.mkdir(parents=True, exist_ok=True)
    data = {"fingerprint": fingerprint(profile), **profile.to_dict()}
    (layout.machines / f"{profile.name}.json").write_text(json.dumps(data, indent=2, sort_keys=True))


def asv_command(machine: str, commit: str, bench: str | None, config: Path,
                python: str = sys.executable) -> list[str]:
    """The `asv run` command line for the checkout in hand."""
    cmd = [python, "-m", "asv", "run", "--config", str(config),
           "--environment", f"existing:{python}", "--set-commit-hash", commit,
           "--record-samples", "--launch-method", "forkserver", "--machine", machine, "--show-stderr"]
    if bench:
        cmd += ["--bench", bench]
    return cmd


def run(layout: Layout, profile: Profile, machine_profile: MachineProfile, bench: str | None = None,
        on_progress: Progress | None = None) -> RunOutcome:
    """Run the profile's benchmarks of the project's suite through asv; returns the results files."""
    commit = git.head(layout.project.root)
    machine = machine_profile.name
    memory_limit(os.environ.get(MEMORY_LIMIT_VAR))  # a malformed limit fails here, not in every benchmark
    write_machine_files(machine_profile, layout)
    cmd = asv_command(machine, commit, bench or profile.bench or None, layout.config)
    oom_before = oom_kills()
    log = drive(cmd, layout.project.root, environment(layout, profile, commit), on_progress)
    results = tuple(sorted((layout.results / machine).glob(f"{commit[:8]}-*.json")))
    if log.returncode != 0 and not results:
        raise RunError("asv run failed:\n" + log.tail())
    oom = (oom_kills() or 0) - (oom_before or 0)
    sidecar.append(layout.sidecar, asv_log.from_asv_log(log.text, commit, oom_kills=oom))
    return RunOutcome(log.returncode, commit, machine, results, layout.sidecar, log.text)


@dataclass(frozen=True)
class Measured:
    """What a measuring command did: asv's run, and what of it went into the database."""

    outcome: RunOutcome
    ingested: IngestReport


def measure(engine: Engine, layout: Layout, catalogue: Catalogue, profile: Profile, machine_profile: MachineProfile,
            bench: str | None = None, on_progress: Progress | None = None) -> Measured:
    """Measure the checkout in hand and ingest the results with the project's claims."""
    outcome = run(layout, profile, machine_profile, bench, on_progress)
    ingested = ingest_run(engine, layout, list(outcome.results), catalogue.claims, repo=layout.project.root)
    return Measured(outcome, ingested)
