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


def write_machine_files(profile: MachineProfile, home: Path = ASV_HOME, results: Path = RESULTS_DIR) -> None:
    """asv's ~/.asv-machine.json (kept under the project) and the full profile beside the results."""
    home.mkdir(parents=True, exist_ok=True)
    write_asv_machine_file(profile, home / ".asv-machine.json")
    target = results / profile.name
    target.mkdir(parents=True, exist_ok=True)
    data = {"fingerprint": fingerprint(profile), **profile.to_dict()}
    (target / PROFILE_FILE).write_text(json.dumps(data, indent=2, sort_keys=True))


def run_environment(profile: Profile, home: Path = ASV_HOME, sidecar_path: Path = SIDECAR) -> dict[str, str]:
    """The environment asv and every benchmark process runs with."""
    env = dict(os.environ)
    env.update({
        "HOME": str(home),
        PROFILE_VAR: profile.name,
        sidecar.ENV_VAR: str(sidecar_path),
        # glibc keeps freed memory unless large blocks are mmapped: makes RSS peaks repeatable.
        "MALLOC_MMAP_THRESHOLD_": "65536",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "TORCHINDUCTOR_CACHE_DIR": env.get("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".proofbench" / "inductor-cache")),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    })
    return env


def asv_command(machine: str, commit: str, bench: str | None, python: str = sys.executable) -> list[str]:
    """The `asv run` command line for the checkout in hand."""
    cmd = [python, "-m", "asv", "run", "--config", str(ROOT / "asv.conf.json"),
           "--environment", f"existing:{python}", "--set-commit-hash", commit,
           "--record-samples", "--launch-method", "forkserver", "--machine", machine, "--show-stderr"]
    if bench:
        cmd += ["--bench", bench]
    return cmd


def run(profile: Profile, machine_profile: MachineProfile, bench: str | None = None,
        on_progress: Callable[[float, str], None] | None = None) -> RunOutcome:
    """Run the profile's benchmarks through asv; returns the results files it wrote."""
    commit = git_head()
    machine = machine_profile.name
    write_machine_files(machine_profile)
    cmd = asv_command(machine, commit, bench or profile.bench or None)
    lines: list[str] = []
    with subprocess.Popen(cmd, cwd=ROOT, env=run_environment(profile), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        assert proc.stdout is not None  # guaranteed by stdout=PIPE
        for line in proc.stdout:
            lines.append(line)
            match = _PROGRESS.match(line.strip())
            if match and on_progress:
                on_progress(float(match.group(1)), match.group(2))
    results = tuple(sorted((RESULTS_DIR / machine).glob(f"{commit[:8]}-*.json")))
    if proc.returncode != 0 and not results:
        raise RunError("asv run failed:\n" + "".join(lines[-30:]))
    return RunOutcome(proc.returncode, commit, machine, results, SIDECAR, "".join(lines))
