"""Drives `asv run` on the checkout in hand: one measuring engine, asv's.

The run uses asv's `existing` environment (the Python running proofbench, where the project
is installed editable) with `--set-commit-hash HEAD` so results are stored, `--record-samples`
so raw samples exist, and the forkserver launcher so `import torch` is paid once, not once
per benchmark process. asv's machine file is kept under the project (`.asv/home`) rather than
in the user's home directory.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness import sidecar
from harness.ingest import PROFILE_FILE
from harness.machine import MachineProfile, fingerprint, write_asv_machine_file
from harness.errors import RunError
from harness.profile import ENV_VAR as PROFILE_VAR
from harness.profile import Profile

ROOT = Path(__file__).resolve().parent.parent
ASV_DIR = ROOT / ".asv"
RESULTS_DIR = ASV_DIR / "results"
SIDECAR = ASV_DIR / "sidecar.jsonl"
ASV_HOME = ASV_DIR / "home"


@dataclass(frozen=True)
class Layout:
    """Where asv's configuration, results, machine file and the sidecar live.

    The default is the project's own `.asv/`; tests and fleets may use any directory, for
    which a copy of asv.conf.json with absolute paths is written.
    """

    config: Path = ROOT / "asv.conf.json"
    results: Path = RESULTS_DIR
    sidecar: Path = SIDECAR
    home: Path = ASV_HOME

    @classmethod
    def under(cls, directory: Path) -> "Layout":
        """A layout whose every output lies below `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        conf = json.loads((ROOT / "asv.conf.json").read_text())
        conf.update(repo=str(ROOT), benchmark_dir=str(ROOT / "benchmarks"), env_dir=str(directory / "env"),
                    results_dir=str(directory / "results"), html_dir=str(directory / "html"))
        (directory / "asv.conf.json").write_text(json.dumps(conf, indent=2))
        return cls(directory / "asv.conf.json", directory / "results", directory / "sidecar.jsonl",
                   directory / "home")
_PROGRESS = re.compile(r"^\[\s*(\d+(?:\.\d+)?)%\]\s+\S+\s+(.*)$")


@dataclass(frozen=True)
class RunOutcome:
    """What one asv run left behind."""

    returncode: int
    commit: str
    machine: str
    results: tuple[Path, ...]
    sidecar: Path
    log: str


def git_head(repo: Path = ROOT) -> str:
    """The full hash of HEAD, or RunError when the checkout has no commit."""
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RunError(f"{repo}: not a git checkout with a commit (asv stores results per commit)")
    return out.stdout.strip()


def write_machine_files(profile: MachineProfile, layout: Layout) -> None:
    """asv's ~/.asv-machine.json (kept under the project) and the full profile beside the results."""
    layout.home.mkdir(parents=True, exist_ok=True)
    write_asv_machine_file(profile, layout.home / ".asv-machine.json")
    target = layout.results / profile.name
    target.mkdir(parents=True, exist_ok=True)
    data = {"fingerprint": fingerprint(profile), **profile.to_dict()}
    (target / PROFILE_FILE).write_text(json.dumps(data, indent=2, sort_keys=True))


def run_environment(profile: Profile, commit: str, layout: Layout) -> dict[str, str]:
    """The environment asv and every benchmark process runs with."""
    env = dict(os.environ)
    env.update({
        sidecar.COMMIT_VAR: commit,
        "HOME": str(layout.home),
        PROFILE_VAR: profile.name,
        sidecar.ENV_VAR: str(layout.sidecar),
        # glibc keeps freed memory unless large blocks are mmapped: makes RSS peaks repeatable.
        "MALLOC_MMAP_THRESHOLD_": "65536",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "TORCHINDUCTOR_CACHE_DIR": env.get("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".proofbench" / "inductor-cache")),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    })
    return env


def asv_command(machine: str, commit: str, bench: str | None, config: Path,
                python: str = sys.executable) -> list[str]:
    """The `asv run` command line for the checkout in hand."""
    cmd = [python, "-m", "asv", "run", "--config", str(config),
           "--environment", f"existing:{python}", "--set-commit-hash", commit,
           "--record-samples", "--launch-method", "forkserver", "--machine", machine, "--show-stderr"]
    if bench:
        cmd += ["--bench", bench]
    return cmd


def run(profile: Profile, machine_profile: MachineProfile, bench: str | None = None,
        on_progress: Callable[[float, str], None] | None = None, layout: Layout = Layout()) -> RunOutcome:
    """Run the profile's benchmarks through asv; returns the results files it wrote."""
    commit = git_head()
    machine = machine_profile.name
    write_machine_files(machine_profile, layout)
    cmd = asv_command(machine, commit, bench or profile.bench or None, layout.config)
    lines: list[str] = []
    with subprocess.Popen(cmd, cwd=ROOT, env=run_environment(profile, commit, layout), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        assert proc.stdout is not None  # guaranteed by stdout=PIPE
        for line in proc.stdout:
            lines.append(line)
            match = _PROGRESS.match(line.strip())
            if match and on_progress:
                on_progress(float(match.group(1)), match.group(2))
    results = tuple(sorted((layout.results / machine).glob(f"{commit[:8]}-*.json")))
    if proc.returncode != 0 and not results:
        raise RunError("asv run failed:\n" + "".join(lines[-30:]))
    return RunOutcome(proc.returncode, commit, machine, results, layout.sidecar, "".join(lines))
