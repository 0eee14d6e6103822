"""Drives `asv run` on the checkout in hand: one measuring engine, asv's.

The run uses asv's `existing` environment (the Python running proofbench, where the project
is installed editable) with `--set-commit-hash HEAD` so results are stored, `--record-samples`
so raw samples exist, and the forkserver launcher so `import torch` is paid once, not once
per benchmark process. asv's machine file is kept under the project (`.asv/home`) rather than
in the user's home directory.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import psutil

from proofbench import git, project
from proofbench.errors import RunError
from proofbench.machine.capture import (
    MachineProfile,
    fingerprint,
    write_asv_machine_file,
)
from proofbench.measure import sidecar
from proofbench.measure.bench import MEMORY_LIMIT_VAR, memory_limit
from proofbench.pipeline import asv_log
from proofbench.pipeline.generate import WORKDIR_VAR, benchmarks_dir
from proofbench.pipeline.ingest import PROFILE_FILE
from proofbench.profile import ENV_VAR as PROFILE_VAR
from proofbench.profile import Profile

ROOT = project.ROOT
# $PROOFBENCH_WORKDIR moves every output of a run (results, sidecar, machine file, generated
# benchmarks) out of the project: tests run extra subjects that way (see proofbench.registry).
ASV_DIR = Path(os.environ[WORKDIR_VAR]).resolve() if os.environ.get(WORKDIR_VAR) else ROOT / ".asv"
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
    def under(cls, directory: Path, benchmarks: Path | None = None) -> "Layout":
        """A layout whose every output lies below `directory`; asv reads the benchmark modules
        from `benchmarks` (default: the project's benchmarks/)."""
        directory.mkdir(parents=True, exist_ok=True)
        conf = json.loads((ROOT / "asv.conf.json").read_text())
        conf.update(repo=str(ROOT), benchmark_dir=str(benchmarks or ROOT / "benchmarks"),
                    env_dir=str(directory / "env"), results_dir=str(directory / "results"),
                    html_dir=str(directory / "html"))
        (directory / "asv.conf.json").write_text(json.dumps(conf, indent=2))
        return cls(directory / "asv.conf.json", directory / "results", directory / "sidecar.jsonl",
                   directory / "home")

    @classmethod
    def default(cls) -> "Layout":
        """The project's `.asv/`, or everything under $PROOFBENCH_WORKDIR when it is set
        (with the benchmark modules `proofbench generate` wrote there)."""
        workdir = os.environ.get(WORKDIR_VAR)
        if not workdir:
            return cls()
        return cls.under(Path(workdir).resolve(), benchmarks=benchmarks_dir())


STOP_GRACE = 10.0  # seconds asv gets to stop its benchmarks after an interrupt
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
        # asv drops PYTHONPATH in benchmark processes and honours this one instead, so subject
        # modules chosen by $PROOFBENCH_SUBJECTS import there as they do here.
        "ASV_PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH"),
                                                         env.get("ASV_PYTHONPATH")])),
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
        on_progress: Callable[[float, str], None] | None = None, layout: Layout | None = None) -> RunOutcome:
    """Run the profile's benchmarks through asv; returns the results files it wrote.

    Why a benchmark that hung or was killed failed is read from asv's output and appended to
    the sidecar (see `asv_log.from_asv_log`). Ctrl-C or SIGTERM stops asv and every process
    it started, then raises KeyboardInterrupt: nothing of the interrupted run is ingested.
    """
    layout = layout or Layout.default()
    commit = git.head(ROOT)
    machine = machine_profile.name
    memory_limit(os.environ.get(MEMORY_LIMIT_VAR))  # a malformed limit fails here, not in every benchmark
    write_machine_files(machine_profile, layout)
    cmd = asv_command(machine, commit, bench or profile.bench or None, layout.config)
    oom_before = oom_kills()
    lines, returncode = _drive(cmd, run_environment(profile, commit, layout), on_progress)
    results = tuple(sorted((layout.results / machine).glob(f"{commit[:8]}-*.json")))
    if returncode != 0 and not results:
        raise RunError("asv run failed:\n" + "".join(lines[-30:]))
    oom = (oom_kills() or 0) - (oom_before or 0)
    sidecar.append(layout.sidecar, asv_log.from_asv_log("".join(lines), commit, oom_kills=oom))
    return RunOutcome(returncode, commit, machine, results, layout.sidecar, "".join(lines))


def _drive(cmd: list[str], env: dict[str, str],
           on_progress: Callable[[float, str], None] | None) -> tuple[list[str], int]:
    # asv's output lines and exit status. asv runs in its own session so that an interrupt
    # reaches it only through _stop, which also ends its forkserver.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, start_new_session=True)
    lines: list[str] = []
    try:
        with _sigterm_as_interrupt():
            for line in proc.stdout:  # type: ignore[union-attr]  (stdout=PIPE)
                lines.append(line)
                match = _PROGRESS.match(line.strip())
                if match and on_progress:
                    on_progress(float(match.group(1)), match.group(2))
            proc.wait()
    except BaseException:
        _stop(proc)
        raise
    finally:
        proc.stdout.close()  # type: ignore[union-attr]
    return lines, proc.returncode


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    # SIGTERM ends a run the way Ctrl-C does, so asv's processes are stopped, not orphaned.
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(proc: subprocess.Popen, grace: float = STOP_GRACE) -> None:
    """Stop asv: SIGINT first (it then closes its forkserver), SIGKILL to all it started after `grace`."""
    if proc.poll() is not None:
        return
    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for child in family:  # the forkserver and its benchmark live in process groups of their own
        with contextlib.suppress(psutil.Error):
            child.kill()


def oom_kills(cgroup_list: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """How many processes the kernel's OOM killer has ended in this process's memory cgroup
    (cgroup v2 `memory.events`, v1 `memory.oom_control`); None where that cannot be read."""
    try:
        entries = [line.split(":", 2) for line in cgroup_list.read_text().splitlines()]
    except OSError:
        return None
    for _, controllers, path in (e for e in entries if len(e) == 3):
        if controllers == "":
            counter = root / path.lstrip("/") / "memory.events"
        elif "memory" in controllers.split(","):
            counter = root / "memory" / path.lstrip("/") / "memory.oom_control"
        else:
            continue
        try:
            match = re.search(r"^oom_kill (\d+)$", counter.read_text(), re.MULTILINE)
        except OSError:
            continue
        if match:
            return int(match.group(1))
    return None
