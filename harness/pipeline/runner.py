"""Measures the checkout in hand: asv's `existing` environment, the project's own suite.

The run uses the Python running proofbench (where the project is installed) with
`--set-commit-hash HEAD` so results are stored per commit, `--record-samples` so raw samples
exist, and the forkserver launcher so `import torch` is paid once, not once per benchmark
process. Why a benchmark that hung or was killed failed is read from asv's output and appended
to the diagnostics (`asv_log.from_asv_log`). Ctrl-C or SIGTERM stops asv and every process it
started (`asv.drive`): nothing of the interrupted run is ingested.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from proofbench import git
from proofbench.catalogue import Catalogue
from proofbench.errors import InputError, RunError
from proofbench.machine.capture import MachineProfile, check_name, fingerprint, write_asv_machine_file
from proofbench.measure import sidecar
from proofbench.measure.bench import MEMORY_LIMIT_VAR, memory_limit
from proofbench.pipeline import asv_log
from proofbench.pipeline.asv import Layout, Progress, drive, environment, oom_kills
from proofbench.pipeline.generate import benchmark_index
from proofbench.pipeline.ingest import IngestReport, ingest_run
from proofbench.profile import Profile
from proofbench.registry import Registry


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
    check_name(profile.name)
    layout.home.mkdir(parents=True, exist_ok=True)
    write_asv_machine_file(profile, layout.home / ".asv-machine.json")
    layout.machines.mkdir(parents=True, exist_ok=True)
    data = {"fingerprint": fingerprint(profile), **profile.to_dict()}
    (layout.machines / f"{profile.name}.json").write_text(json.dumps(data, indent=2, sort_keys=True))


def asv_command(machine: str, commit: str, bench: str | None, config: Path,
                python: str = sys.executable) -> list[str]:
    """The `asv run` command line for the checkout in hand."""
    # Values go in the option's own argument (--bench=...), so none can be read as an option.
    cmd = [python, "-m", "asv", "run", f"--config={config}", f"--environment=existing:{python}",
           f"--set-commit-hash={commit}", "--record-samples", "--launch-method=forkserver", f"--machine={machine}",
           "--show-stderr"]
    if bench:
        cmd.append(f"--bench={bench}")
    return cmd


def check_selection(bench: str | None, registry: Registry, profile: Profile) -> None:
    """InputError unless `bench` (asv's --bench: a regular expression searched for in each
    benchmark's name with its parameters, `loading.LmdbRead.time_call('baseline', 'small')`)
    selects at least one benchmark of `registry` at the profile's sizes."""
    if not bench:
        return
    try:
        pattern = re.compile(bench)
    except re.error as exc:
        raise InputError(f"--bench {bench!r}: not a regular expression ({exc})") from None
    names = [f"{name}('{variant.name}', '{size}')" for name, info in benchmark_index(registry).items()
             for variant in info.subject.variants for size in profile.sizes]
    if not any(pattern.search(name) for name in names):
        raise InputError(f"--bench {bench!r}: no benchmark matched (names read like {names[0] if names else 'none'}; "
                         f"profile {profile.name} has sizes {', '.join(profile.sizes)})")


def _contents(directory: Path, commit: str) -> dict[Path, str]:
    # each results file of `commit` by the hash of its bytes (a FIFO or a directory is no file asv wrote)
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.glob(f"{commit[:8]}-*.json"))
            if p.is_file()}


def run(layout: Layout, profile: Profile, machine_profile: MachineProfile, bench: str | None = None,
        on_progress: Progress | None = None) -> RunOutcome:
    """Run the profile's benchmarks of the project's suite through asv; returns the results files
    this run wrote."""
    commit = git.head(layout.project.root)
    machine = machine_profile.name
    memory_limit(os.environ.get(MEMORY_LIMIT_VAR))  # a malformed limit fails here, not in every benchmark
    write_machine_files(machine_profile, layout)
    cmd = asv_command(machine, commit, bench or profile.bench or None, layout.config)
    oom_before = oom_kills()
    before = _contents(layout.results / machine, commit)
    log = drive(cmd, layout.project.root, environment(layout, profile, commit), on_progress)
    # only what this run wrote: a file asv left as it was holds an earlier run's results
    results = tuple(p for p, digest in _contents(layout.results / machine, commit).items() if before.get(p) != digest)
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
    check_selection(bench or profile.bench, catalogue.registry, profile)
    outcome = run(layout, profile, machine_profile, bench, on_progress)
    ingested = ingest_run(engine, layout, list(outcome.results), catalogue.claims, repo=layout.project.root)
    return Measured(outcome, ingested)
