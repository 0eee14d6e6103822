"""Running the real `proofbench` command line on the faulty project, a project directory of its own,
and reading back what it stored.

`Project(workdir, db_url).cli("run", ...)` runs `python -m proofbench` in a subprocess whose working
directory is `workdir`, a project made for the test: a proofbench.toml naming the faulty subjects,
an asv.conf.json, a git repository with one commit, and $PROOFBENCH_MEMORY_LIMIT set. Nothing of
proofbench's own checkout is read or written. `generate()` must come first: it writes the faulty
subjects' benchmark module into the project's suite.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import psutil

ROOT = Path(__file__).resolve().parent.parent.parent
SUBJECTS = "tests.faulty.faults"
BENCH = r"^loading\.Faulty"
MEMORY_LIMIT = "256M"
_ASV_CONF = {"version": 1, "project": "faulty", "project_url": "https://example.invalid/faulty", "repo": ".",
             "branches": ["main"], "dvcs": "git", "environment_type": "virtualenv", "benchmark_dir": "benchmarks",
             "env_dir": "env", "results_dir": "results", "html_dir": "html", "launch_method": "forkserver",
             "default_benchmark_timeout": 60}
_GIT = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "b@example.invalid", "GIT_CONFIG_NOSYSTEM": "1",
        # fixed dates: every faulty project is the same commit, as runs of one checkout would be
        "GIT_AUTHOR_DATE": "2026-11-01T00:00:00+00:00", "GIT_COMMITTER_DATE": "2026-11-01T00:00:00+00:00"}


@dataclass(frozen=True)
class Project:
    """A project directory (`workdir`) and a database the faulty project runs into."""

    workdir: Path
    db_url: str
    subjects: str = SUBJECTS

    def make(self) -> None:
        """Write the project's files and commit them (asv stores results per commit); idempotent."""
        if (self.workdir / "proofbench.toml").exists():
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "proofbench.toml").write_text(f'subjects = ["{self.subjects}"]\nworkdir = "."\n')
        (self.workdir / "asv.conf.json").write_text(json.dumps(_ASV_CONF, indent=2))
        env = {**os.environ, **_GIT, "HOME": str(self.workdir)}
        for args in (["init", "-q", "-b", "main"], ["add", "proofbench.toml", "asv.conf.json"],
                     ["commit", "-q", "-m", "The faulty project"]):
            subprocess.run(["git", "-C", str(self.workdir), *args], check=True, env=env, capture_output=True)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of every command: the checkout importable (the faulty subjects), a memory bound."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFBENCH_")}
        env.update(PROOFBENCH_MEMORY_LIMIT=MEMORY_LIMIT, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        env.update(extra)
        return env

    def generate(self) -> None:
        """Write the faulty subjects' benchmark module into the project's suite."""
        self.make()
        subprocess.run(self.command("generate", db=False), cwd=self.workdir, env=self.env(), check=True,
                       timeout=120, capture_output=True)

    def command(self, *args: str, db: bool = True) -> list[str]:
        """The command line of `proofbench ARGS [--db URL]`."""
        return [sys.executable, "-m", "proofbench", *args, *(("--db", self.db_url) if db else ())]

    def cli(self, *args: str, db: bool = True, timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
        """Run `proofbench ARGS [--db URL]` in the project to the end."""
        self.make()
        return subprocess.run(self.command(*args, db=db), cwd=self.workdir, env=self.env(**env), capture_output=True,
                              text=True, timeout=timeout)

    def start(self, *args: str, **env: str) -> subprocess.Popen:
        """Start `proofbench ARGS --db URL`; its output goes to stdout.txt and stderr.txt in the work directory.

        It starts with Ctrl-C's default action, as from a terminal: a test suite started in the
        background by a non-interactive shell (`make test &`) ignores SIGINT, children inherit
        that, and Python then installs no KeyboardInterrupt for it."""
        self.make()
        with open(self.workdir / "stdout.txt", "w") as out, open(self.workdir / "stderr.txt", "w") as err:
            return subprocess.Popen(self.command(*args), cwd=self.workdir, env=self.env(**env), stdout=out,
                                    stderr=err, preexec_fn=_interruptible)

    @property
    def results_dir(self) -> Path:
        return self.workdir / "results"

    @property
    def sidecar(self) -> Path:
        return self.workdir / "sidecar.jsonl"

    @property
    def db_path(self) -> Path:
        return Path(self.db_url.removeprefix("sqlite:///"))


_ROWS = """
SELECT c.hash, b.name, b.version, r.params_key, r.status, r.reason, r.value, r.samples, r.number, r.duration,
       m.name, e.name, f.sha256
FROM results r JOIN benchmarks b ON b.id = r.benchmark_id JOIN commits c ON c.id = r.commit_id
JOIN machines m ON m.id = r.machine_id JOIN environments e ON e.id = r.environment_id
LEFT JOIN ingested_files f ON f.id = r.file_id
"""


def rows(db_path: Path) -> list[dict]:
    """Every stored result with its benchmark, commit, machine and file, as plain values."""
    with _connect(db_path) as db:
        names = ("commit", "benchmark", "version", "params", "status", "reason", "value", "samples", "number",
                 "duration", "machine", "environment", "file")
        out = [dict(zip(names, row)) for row in db.execute(_ROWS)]
    for row in out:  # JSON columns: SQL NULL and JSON null both mean "none"
        row["params"] = json.loads(row["params"])
        row["samples"] = json.loads(row["samples"]) if row["samples"] is not None else None
    return out


def state(db_path: Path) -> list[str]:
    """The database's content in a comparable form (NaN included), sorted."""
    files = []
    with _connect(db_path) as db:
        files = [json.dumps(list(row)) for row in db.execute("SELECT sha256, results FROM ingested_files")]
    return sorted([json.dumps(row, sort_keys=True) for row in rows(db_path)] + files)


def files_and_rows(db_path: Path) -> tuple[dict[str, int], dict[str, int], int]:
    """Per ingested file: the count it declares and the rows it has; and rows without a file."""
    with _connect(db_path) as db:
        declared = dict(db.execute("SELECT sha256, results FROM ingested_files"))
        stored = dict(db.execute("SELECT f.sha256, count(r.id) FROM ingested_files f "
                                 "LEFT JOIN results r ON r.file_id = f.id GROUP BY f.sha256"))
        orphans = db.execute("SELECT count(*) FROM results r LEFT JOIN ingested_files f ON f.id = r.file_id "
                             "WHERE f.id IS NULL").fetchone()[0]
    return declared, stored, orphans


def count_files(db_path: Path) -> int:
    """Ingested files so far, read while another process may be writing; 0 before the schema exists."""
    try:
        with _connect(db_path) as db:
            return db.execute("SELECT count(*) FROM ingested_files").fetchone()[0]
    except sqlite3.Error:
        return 0


class _connect:
    # A short-lived read connection that is always closed (sqlite3's own context manager is not).
    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, *exc: object) -> None:
        self.db.close()


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (WAL included)."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def results_file(project: Project) -> Path:
    """The one results file a run of the faulty project wrote."""
    (path,) = [p for p in project.results_dir.glob("*/*.json") if p.name not in ("machine.json", "benchmarks.json")]
    return path


def _interruptible() -> None:
    # in the child, before it runs proofbench: SIGINT back to its default disposition
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(condition: Callable[[], Any], proc: subprocess.Popen | None, seconds: float) -> Any:
    """Poll `condition` until it returns something true; TimeoutError after `seconds`, or
    ChildProcessError if `proc` exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            raise ChildProcessError(f"exited early with status {proc.returncode}")
        time.sleep(0.05)
    raise TimeoutError(f"nothing after {seconds} s")


def processes_of(workdir: Path) -> list[psutil.Process]:
    """Live processes whose command line names the work directory (asv, its forkserver)."""
    return [p for p in psutil.process_iter(["cmdline"]) if str(workdir) in " ".join(p.info["cmdline"] or [])]


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
