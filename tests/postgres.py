"""A real PostgreSQL server for the tests, and a fresh database on it per test.

Where the server comes from, in order:
1. $PROOFBENCH_TEST_POSTGRES, a SQLAlchemy URL of a role that may create databases. .ci/run
   starts Debian's PostgreSQL on 127.0.0.1 and sets it. When it is set the server must answer:
   the tests fail (not skip) if it does not.
2. Else, when PostgreSQL's server programs are installed (`initdb`, `pg_ctl`; Debian puts them
   in /usr/lib/postgresql/<version>/bin), a throwaway cluster in a temporary directory on a
   free loopback port, trust authentication, stopped and removed at the end of the session.
   As root, it runs as the `postgres` user (initdb refuses root).
3. Else the tests that need it are skipped, saying why; under CI ($CI set) they fail instead.

Test modules import the fixtures they use: `from postgres import db_url, postgres_url, postgres_server`.
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ENV_VAR = "PROOFBENCH_TEST_POSTGRES"
DRIVER = "postgresql+psycopg"


def _server_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3])
                      if p.parts[-3].isdigit() else 0)
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; Debian's package provides the postgres user
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str]) -> None:
    out = subprocess.run(_as_server_user(cmd), capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed: {(out.stderr or out.stdout).strip()[-400:]}")


class ThrowawayServer:
    """A PostgreSQL cluster in its own temporary directory, listening on 127.0.0.1 only."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.directory = Path(tempfile.mkdtemp(prefix="proofbench-pg-"))
        self.data = self.directory / "data"
        self.port = _free_port()
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name

    def start(self) -> str:
        """initdb + pg_ctl start; returns the superuser's URL."""
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
        _run([str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", self.user,
              "-E", "UTF8", "--no-sync"])
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off"
        _run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
              str(self.directory / "server.log"), "-w", "-t", "60", "start"])
        self._watch()
        return f"{DRIVER}://{self.user}@127.0.0.1:{self.port}/postgres"

    def _watch(self) -> None:
        # pg_ctl detaches the server: should this test process be killed before its teardown
        # (a timeout, ^C twice), a watchdog in its own session stops the server and cleans up.
        script = 'while kill -0 "$0" 2>/dev/null; do sleep 2; done; "$@" -m immediate stop >/dev/null 2>&1; rm -rf "$DIR"'
        stop = _as_server_user([str(self.bindir / "pg_ctl"), "-D", str(self.data)])
        subprocess.Popen(["sh", "-c", script, str(os.getpid()), *stop], env={**os.environ, "DIR": str(self.directory)},
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        try:
            _run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        except (RuntimeError, subprocess.TimeoutExpired):
            pass  # never started, or already gone: the directory is removed either way
        shutil.rmtree(self.directory, ignore_errors=True)


def _unavailable(reason: str) -> None:
    if os.environ.get(ENV_VAR) or os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required here but unavailable: {reason}")
    pytest.skip(f"no PostgreSQL server: {reason}")


def _reachable(url: str) -> str | None:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:  # any failure to connect is the reason the server cannot be used
        return str(getattr(exc, "orig", exc)).strip().splitlines()[0]
    finally:
        engine.dispose()
    return None


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of a role on a running PostgreSQL server that may create databases."""
    url = os.environ.get(ENV_VAR)
    if url:
        problem = _reachable(url)
        if problem:
            _unavailable(f"${ENV_VAR} is set but the server does not answer: {problem}")
        yield url
        return
    bindir = _server_bin()
    if bindir is None:
        _unavailable(f"${ENV_VAR} is not set and initdb/pg_ctl are not installed "
                     "(apt-get install -y postgresql)")
    server = ThrowawayServer(bindir)
    try:
        url = server.start()
    except (RuntimeError, OSError, KeyError, subprocess.TimeoutExpired) as exc:
        server.stop()
        _unavailable(f"could not start a throwaway server with {bindir}: {exc}")
    yield url
    server.stop()


@pytest.fixture
def postgres_url(postgres_server):
    """A fresh, empty database on the server for one test, dropped afterwards."""
    name = f"proofbench_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(postgres_server).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """Each test that uses it runs twice: on a SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'proofbench.sqlite'}"
    return request.getfixturevalue("postgres_url")
