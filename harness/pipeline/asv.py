"""Driving asv: where its files lie for a project, what environment its processes get, and the one
driver that streams asv's progress and, on Ctrl-C or SIGTERM, stops asv and everything it started.

asv itself measures (DESIGN: one measuring engine). proofbench hands it the project's
configuration (read with asv's own loader, so `//` comments are fine), keeps asv's machine file
under the project's work directory instead of the user's home, and passes what the benchmark
processes need through environment variables: the profile, the diagnostics file, the commit.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

import psutil

from proofbench.errors import InputError, RunError
from proofbench.measure import sidecar
from proofbench.profile import ENV_VAR as PROFILE_VAR
from proofbench.profile import FILE_VAR as PROFILES_VAR
from proofbench.profile import Profile
from proofbench.project import ENV_VAR as PROJECT_VAR
from proofbench.project import Project

STOP_GRACE = 10.0  # seconds asv gets to stop its benchmarks after an interrupt
_PROGRESS = re.compile(r"^\[\s*(\d+(?:\.\d+)?)%\]\s+\S+\s+(.*)$")
Progress = Callable[[float, str], None]  # (percent done, what asv is doing)


def read_config(path: Path) -> dict[str, Any]:
    """asv's configuration file, read as asv reads it (comments allowed); InputError naming it."""
    from asv import util  # asv's loader: json5 for comments

    if not path.is_file():  # a FIFO would be waited on forever
        raise InputError(f"{path}: asv's configuration is {'not a regular file' if path.exists() else 'missing'}")
    try:
        data = util.load_json(str(path), js_comments=True)
    except (OSError, ValueError, util.UserError) as exc:
        raise InputError(f"{path}: cannot read asv's configuration: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: asv's configuration must be a JSON object")
    return data


@dataclass(frozen=True)
class Layout:
    """Where one project's asv files lie: the configuration asv runs with, its results, the suite,
    the environments, and proofbench's work directory (diagnostics, asv's machine file)."""

    project: Project
    config: Path
    results: Path
    benchmarks: Path
    env_dir: Path
    workdir: Path

    @property
    def sidecar(self) -> Path:
        return self.workdir / "sidecar.jsonl"

    @property
    def machines(self) -> Path:
        """Each machine's full profile, as `<name>.json` (outside asv's results, which asv reads)."""
        return self.workdir / "machines"

    @property
    def home(self) -> Path:
        """The HOME asv runs with: its machine file lives here, not in the user's home."""
        return self.workdir / "home"

    @classmethod
    def of(cls, project: Project) -> "Layout":
        """The project's own layout: asv's paths as its configuration gives them."""
        conf = read_config(project.asv_config)
        base = project.asv_config.parent
        return cls(project, project.asv_config, _under(base, conf.get("results_dir", "results")),
                   _under(base, conf.get("benchmark_dir", "benchmarks")), _under(base, conf.get("env_dir", "env")),
                   project.workdir)

    @classmethod
    def under(cls, project: Project, directory: Path) -> "Layout":
        """The project's suite, with every output (results, environments, diagnostics) below
        `directory`: a copy of the configuration with absolute paths is written there."""
        own = cls.of(project)
        directory = directory.resolve()
        directory.mkdir(parents=True, exist_ok=True)
        conf = read_config(project.asv_config)
        conf.update(repo=str(_under(project.asv_config.parent, conf.get("repo", "."))),
                    benchmark_dir=str(own.benchmarks), env_dir=str(directory / "env"),
                    results_dir=str(directory / "results"), html_dir=str(directory / "html"))
        config = directory / "asv.conf.json"
        config.write_text(json.dumps(conf, indent=2))
        return cls(project, config, directory / "results", own.benchmarks, directory / "env", directory)


_HELD: dict[Path, list] = {}  # lock file -> [open handle, depth]: this process's holds, one per lock


@contextlib.contextmanager
def building(layout: Layout) -> Iterator[None]:
    """Hold `layout`'s asv environments for one command that builds and measures commits in them
    (its suite regenerated, its work folders emptied, asv's runs): two processes at once build
    each other's commits into the one checkout there and cache a wheel of one commit under
    another's hash, which measures the wrong code from then on. `run`, which builds nothing,
    holds them too: it rewrites the suite the other reads, and each slows the other's timings.
    A RunError, at once, where another process holds them (a nightly check and a `bisect` by
    hand); within one process a hold nests (the command's, then each `history.run`'s)."""
    lock = layout.env_dir / ".proofbench.lock"  # where asv must be able to write anyway
    held = _HELD.get(lock)
    if held is not None:
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
        return
    handle = _take(lock, layout.env_dir)
    _HELD[lock] = [handle, 1]
    try:
        yield
    finally:
        del _HELD[lock]
        handle.truncate(0)
        handle.close()  # closing gives the lock back


def _take(lock: Path, env_dir: Path):
    # the lock file, open and locked by this process, saying who holds it; RunError where another does
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock, "a+", encoding="utf-8")
    except OSError as exc:
        raise RunError(f"{lock}: cannot make the lock of asv's environments: {exc.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip()[:200] or "another process"
        handle.close()
        raise RunError(f"{env_dir}: {holder} is building and measuring commits in these asv environments; "
                       f"two at once build each other's code and slow each other's timings: run this when it is done"
                       ) from None
    command = " ".join(["proofbench", *sys.argv[1:2]])
    handle.truncate(0)
    handle.write(f"{command} (pid {os.getpid()})")
    handle.flush()
    return handle


def _under(base: Path, value: Any) -> Path:
    path = Path(str(value))
    return path if path.is_absolute() else (base / path).resolve()


def environment(layout: Layout, profile: Profile, commit: str = "") -> dict[str, str]:
    """The environment asv and every benchmark process runs with."""
    env = dict(os.environ)
    root = str(layout.project.root)
    python_path = [root, env.get("PYTHONPATH", "")]
    env.update({
        PROJECT_VAR: root,
        sidecar.COMMIT_VAR: commit,
        sidecar.ENV_VAR: str(layout.sidecar),
        PROFILE_VAR: profile.name,
        # the project's profiles file, else the one named in this process's environment: the
        # benchmark processes must know the profiles `proofbench run` chose from
        PROFILES_VAR: str(layout.project.profiles or env.get(PROFILES_VAR, "")),
        "HOME": str(layout.home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        # compiled kernels are kept per project, so a second run compiles from cache
        "TORCHINDUCTOR_CACHE_DIR": env.get("TORCHINDUCTOR_CACHE_DIR") or str(layout.workdir / "inductor-cache"),
        # subject modules import from the project root, in proofbench's process and asv's: asv
        # drops PYTHONPATH in benchmark processes and honours ASV_PYTHONPATH instead
        "PYTHONPATH": os.pathsep.join(filter(None, python_path)),
        "ASV_PYTHONPATH": os.pathsep.join(filter(None, python_path + [env.get("ASV_PYTHONPATH", "")])),
    })
    return env


@dataclass(frozen=True)
class Log:
    """What asv printed, line by line, and how it exited."""

    returncode: int
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def tail(self, count: int = 30) -> str:
        return "".join(self.lines[-count:])


def drive(cmd: list[str], cwd: Path, env: dict[str, str], on_progress: Progress | None = None,
          tee: TextIO | None = None) -> Log:
    """Run one asv command to its end, reporting progress (and writing each line to `tee` as it
    comes: what a job killed midway leaves to read); an interrupt (Ctrl-C, or SIGTERM in the main
    thread) stops asv and everything it started, then raises KeyboardInterrupt.

    asv runs in a session of its own, so an interrupt reaches it only through `_stop`, which
    also ends its forkserver and the benchmark it was running.
    """
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, start_new_session=True)
    lines: list[str] = []
    try:
        with _sigterm_as_interrupt():
            for line in proc.stdout:  # type: ignore[union-attr]  (stdout=PIPE)
                lines.append(line)
                if tee is not None:
                    tee.write(line)
                    tee.flush()
                match = _PROGRESS.match(line.strip())
                if match and on_progress:
                    on_progress(float(match.group(1)), match.group(2))
            proc.wait()
    except BaseException:
        _stop(proc)
        raise
    finally:
        proc.stdout.close()  # type: ignore[union-attr]
    return Log(proc.returncode, tuple(lines))


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
