"""Hostile input to the database side: passwords in every shape of URL, through every command that
connects; databases proofbench may not write, written by a newer proofbench, or not its own;
errors that are bugs (exit 3). Each is one line, exit 2 (3 for a bug), never a password, and the
database is left as it was.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_project
from hostile import cli, digest, one_line, site_db, sql  # noqa: F401  (site_db: a fixture)
from postgres import db_url, postgres_server, postgres_url  # noqa: F401  (fixtures)
from test_report_site import HOSTILE_MACHINE

from proofbench.db.session import masked, scrub, secrets

SECRET = "Zq9-s3cret"


# -- passwords --------------------------------------------------------------------------

URLS = {  # every shape a password takes in a database URL
    "query": f"postgresql+psycopg://bench@127.0.0.1:1/proofbench?password={SECRET}",
    "query-and-user-part": f"postgresql+psycopg://bench:{SECRET}@127.0.0.1:1/p?sslpassword={SECRET}x",
    "no-scheme": f"bench:{SECRET}@127.0.0.1",
    "unencoded-at": f"postgresql+psycopg://bench:{SECRET}@x@127.0.0.1:1/proofbench",
    "unencoded-slash": f"postgresql+psycopg://bench:{SECRET}/x@127.0.0.1:1/proofbench",
    "bad-port": f"postgresql+psycopg://bench:{SECRET}@127.0.0.1:1:2/proofbench",
    "unknown-driver": f"postgresql+nosuch://bench:{SECRET}@127.0.0.1:1/proofbench",
    "sqlite-query": f"sqlite:////nonexistent-dir-for-proofbench/x.sqlite?password={SECRET}",
    "percent-encoded": f"postgresql+psycopg://bench:{SECRET.replace('-', '%2D')}@127.0.0.1:1/proofbench",
    "unencoded-question-mark": f"postgresql+psycopg://bench:{SECRET}?x=1@127.0.0.1:1/proofbench",
    "at-in-query-password": f"postgresql+psycopg://bench@127.0.0.1:1/proofbench?password={SECRET}@x&pwd={SECRET}",
}


@pytest.mark.parametrize("url", URLS.values(), ids=URLS.keys())
def test_masked_hides_every_password(url):
    shown = masked(url)
    assert SECRET not in shown and "%2D" not in shown.split("@")[0], shown
    assert "127.0.0.1" in shown or "nonexistent" in shown  # the rest still says which database
    message = f"could not connect to {url} ({url.split('@', 2)[-1]})"
    assert all(part not in scrub(message, url) for part in secrets(url))


@pytest.mark.parametrize("command", [("report",), ("check", "--format", "json"), ("check", "--no-record"),
                                     ("db", "upgrade"), ("compare", "a", "b"), ("ingest", "."),
                                     ("machine", "--name", "box"), ("run", "--profile", "smoke"),
                                     ("calibrate", "--profile", "smoke"), ("profile", "loading.lmdb_read")],
                         ids=lambda c: "-".join(c))
@pytest.mark.parametrize("url", URLS.values(), ids=URLS.keys())
def test_no_command_prints_a_password(capsys, monkeypatch, tmp_path, url, command):
    monkeypatch.chdir(make_project(tmp_path / "project"))
    for how in ("--db", "env"):
        argv = [*command, *(["--db", url] if how == "--db" else [])]
        if how == "env":
            monkeypatch.setenv("PROOFBENCH_DB", url)
        code, out, err = cli(capsys, *argv)
        assert code == 2, err
        assert SECRET not in out + err and "s3cret" not in out + err
        line = one_line(err) if command[-1] != "json" else json.loads(out)["error"]
        assert "database" in line or "URL" in line, line
        monkeypatch.delenv("PROOFBENCH_DB", raising=False)


# -- databases: read-only, newer, not proofbench's ---------------------------------------

READING = {"report": ("report", "--out", "{out}"), "check": ("check", "--no-record", "--no-git"),
           "check-json": ("check", "--no-record", "--no-git", "--format", "json"),
           "compare": ("compare", "ci-box", HOSTILE_MACHINE)}
WRITING = {"check": ("check", "--no-git"), "ingest": ("ingest", "{empty}"), "db-upgrade": ("db", "upgrade")}


def _without_write_permission() -> list[str] | None:
    # The command prefix under which a file without write permission cannot be written: none for
    # an ordinary user; root must give up overriding permissions (util-linux's setpriv).
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None or subprocess.run([setpriv, "--bounding-set", "-dac_override", "--", "true"]).returncode:
        return None
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--"]


def _cli(prefix: list[str], *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFBENCH_")}
    return subprocess.run([*prefix, sys.executable, "-m", "proofbench", *argv], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


@pytest.mark.slow
def test_reading_commands_work_on_a_database_they_may_not_write(site_db, tmp_path):
    prefix = _without_write_permission()
    if prefix is None:
        pytest.skip("running as root without setpriv: a file without write permission is still writable")
    folder = tmp_path / "readonly"
    folder.mkdir()
    db = folder / "report.sqlite"
    shutil.copyfile(site_db, db)
    before = digest(db)
    writable = tmp_path / "writable.sqlite"
    shutil.copyfile(site_db, writable)
    found = _cli(prefix, *READING["check"], "--db", f"sqlite:///{writable}", cwd=tmp_path).stdout.splitlines()[-1]
    (tmp_path / "empty").mkdir()
    db.chmod(0o444)
    folder.chmod(0o555)
    try:
        url = f"sqlite:///{db}"
        for name, argv in READING.items():
            done = _cli(prefix, *(a.format(out=tmp_path / "site") for a in argv), "--db", url, cwd=tmp_path)
            expected = 1 if name.startswith("check") else 0  # the database holds a regression
            assert done.returncode == expected and "Traceback" not in done.stderr, (name, done.stderr)
        for uri in (f"sqlite:///file:{db}?uri=true", f"sqlite:///file://{db}?uri=true&cache=private"):
            done = _cli(prefix, *READING["check"], "--db", uri, cwd=tmp_path)  # read-only too, as named
            assert done.returncode == 1 and done.stdout.splitlines()[-1] == found, (uri, done.stderr)
            done = _cli(prefix, *WRITING["check"], "--db", uri, cwd=tmp_path)
            assert done.returncode == 2 and one_line(done.stderr) == f"proofbench: {uri}: cannot write the database " \
                "(no write permission on the file or its directory)", done.stderr
        assert (tmp_path / "site" / "index.html").is_file()
        # the same check as on a writable copy, the regressions included
        again = _cli(prefix, *READING["check"], "--db", url, cwd=tmp_path).stdout
        assert "new regression(s)" in found and found in again
        for name, argv in WRITING.items():
            done = _cli(prefix, *(a.format(empty=tmp_path / "empty") for a in argv), "--db", url, cwd=tmp_path)
            assert done.returncode == 2, (name, done.stderr)
            assert "cannot write the database" in one_line(done.stderr)
        assert digest(db) == before and sorted(p.name for p in folder.iterdir()) == ["report.sqlite"]
        folder.chmod(0o755)
        old = folder / "old.sqlite"
        _first_revision(f"sqlite:///{old}")
        folder.chmod(0o555)
        done = _cli(prefix, "report", "--out", str(tmp_path / "site"), "--db", f"sqlite:///{old}", cwd=tmp_path)
        line = one_line(done.stderr)  # a command that only reads never upgrades, read-only or not
        assert done.returncode == 2 and "its schema (0001) is older than" in line and "db upgrade" in line
        uri = f"sqlite:///file:{old}?uri=true"  # opened by another URL, named as typed
        done = _cli(prefix, "report", "--out", str(tmp_path / "site"), "--db", uri, cwd=tmp_path)
        assert one_line(done.stderr).startswith(f"proofbench: {uri}: its schema (0001) is older than"), done.stderr
    finally:
        folder.chmod(0o755)


def _first_revision(url: str) -> None:
    from alembic import command
    from alembic.script import ScriptDirectory

    from proofbench.db.session import alembic_config, engine_for

    engine = engine_for(url)
    with engine.begin() as connection:
        config = alembic_config(engine)
        config.attributes["connection"] = connection
        command.upgrade(config, ScriptDirectory.from_config(config).get_base())
    engine.dispose()


def _newer(path: Path) -> None:
    sql(path, "UPDATE alembic_version SET version_num = '9999_from_the_future'")


def _foreign(path: Path) -> None:
    path.unlink()
    sql(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")


DATABASES = {
    "newer-schema": (_newer, "has schema revision '9999_from_the_future', which this proofbench does not know"),
    "not-proofbench": (_foreign, "is not a proofbench database (it holds other tables: invoices)"),
    "not-sqlite": (lambda p: p.write_bytes(b"PK\x03\x04 a zip, not a database" * 100), "file is not a database"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:8192]), "database disk image is malformed"),
}


def test_tables_of_another_application_and_of_a_newer_proofbench(capsys, db_url, tmp_path):
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY)"))
    code, _, err = cli(capsys, "db", "upgrade", "--db", db_url)
    if db_url.startswith("sqlite"):  # a SQLite file is one application's
        assert code == 2 and "is not a proofbench database (it holds other tables: invoices)" in one_line(err)
        return
    assert code == 0, err  # a PostgreSQL database may be shared: proofbench's tables go beside the others
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_newer'"))
    code, _, err = cli(capsys, "report", "--out", str(tmp_path / "site"), "--db", db_url)
    assert code == 2 and "has schema revision '9999_newer'" in one_line(err)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE alembic_version"))
    code, _, err = cli(capsys, "db", "upgrade", "--db", db_url)
    assert code == 2 and "is not a proofbench database (it holds other tables: alert_actions, alerts," in one_line(err)
    engine.dispose()


@pytest.mark.parametrize("command", [*READING.values(), *WRITING.values()], ids=[*READING, *WRITING])
@pytest.mark.parametrize("case", DATABASES, ids=DATABASES)
def test_a_database_proofbench_cannot_use_is_one_line_and_left_as_it_was(capsys, site_db, tmp_path, case, command):
    db = tmp_path / "db.sqlite"
    shutil.copyfile(site_db, db)
    spoil, message = DATABASES[case]
    spoil(db)
    before = digest(db)
    (tmp_path / "empty").mkdir()
    argv = [a.format(out=tmp_path / "site", empty=tmp_path / "empty") for a in command]
    code, out, err = cli(capsys, *argv, "--db", f"sqlite:///{db}")
    assert code == 2
    assert message in (json.loads(out)["error"] if "json" in argv else one_line(err))
    assert digest(db) == before and not (tmp_path / "site").exists()


# -- what main already refused: verified here ----------------------------------------------

@pytest.mark.parametrize("form", ["text", "json"])
def test_an_internal_error_is_exit_3_in_one_line_and_json_for_json_and_shows_no_password(
        capsys, monkeypatch, tmp_path, form):
    from proofbench.analysis import check

    url = f"sqlite:///{tmp_path / 'db.sqlite'}?uri=true&password={SECRET}"
    (tmp_path / "db.sqlite").touch()  # an empty database: a check refuses one that is not there

    def broken(*args, **kwargs):
        raise ZeroDivisionError(f"boom while reading {url}\nsecond line")

    monkeypatch.setattr(check, "run_check", broken)
    monkeypatch.setenv("PROOFBENCH_DB", url)
    code, out, err = cli(capsys, "check", "--no-git", "--format", form)
    line = one_line(err)
    assert code == 3 and line.startswith("proofbench: internal error: ZeroDivisionError: boom while reading")
    assert "second line" not in err and SECRET not in out + err
    if form == "json":
        document = json.loads(out)
        assert document["status"] == "error" and document["exit_code"] == 3
        assert document["error"].startswith("internal error: ZeroDivisionError: boom")


@pytest.mark.parametrize("out", ["/", "{db}", "{tmp}"])
def test_report_output_that_is_not_empty_or_a_file_is_refused(capsys, site_db, tmp_path, out):
    db = tmp_path / "db.sqlite"
    shutil.copyfile(site_db, db)
    target = out.format(db=db, tmp=tmp_path)
    before = sorted(p.name for p in Path(target).parent.iterdir())
    code, _, err = cli(capsys, "report", "--out", target, "--db", f"sqlite:///{db}")
    line = one_line(err)
    assert code == 2 and ("is a file, not a directory" in line or "is not empty and holds no earlier proofbench site"
                          in line), line
    assert sorted(p.name for p in Path(target).parent.iterdir() if not p.name.startswith("db.sqlite-")) == \
        [n for n in before if not n.startswith("db.sqlite-")]


def test_a_loop_of_symbolic_links_is_one_line(capsys, site_db, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    code, _, err = cli(capsys, "report", "--out", str(loop), "--db", f"sqlite:///{site_db}")
    assert code == 2 and "a loop of symbolic links" in one_line(err)
    code, _, err = cli(capsys, "generate", "--check", "--project", str(loop))
    assert code == 2 and "a loop of symbolic links" in one_line(err)


def test_a_stored_trace_path_publishes_no_other_file(capsys, site_db, tmp_path):
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    db = tmp_path / "db.sqlite"
    shutil.copyfile(site_db, db)
    sql(db, "UPDATE variant_profiles SET traces = json_object('python', ?, 'torch', ?)", str(secret), "/etc/passwd")
    code, _, err = cli(capsys, "report", "--out", str(tmp_path / "site"), "--db", f"sqlite:///{db}")
    assert code == 0, err
    published = [p.read_text(errors="replace") for p in (tmp_path / "site").rglob("*") if p.is_file()]
    assert not any("PRIVATE KEY" in text or "root:x:0:0" in text for text in published)


def test_a_sqlite_path_longer_than_sqlite_opens_says_so(capsys, tmp_path):
    """SQLite opens no database whose path passes its limit, and says only "unable to open
    database file"; the error names the path's length and the limit."""
    folder = tmp_path.joinpath(*["d" * 100] * 5)
    folder.mkdir(parents=True)
    code, _, err = cli(capsys, "db", "upgrade", "--db", f"sqlite:///{folder / 'proofbench.sqlite'}")
    line = one_line(err)
    assert code == 2 and "unable to open database file (its path has" in line and "SQLite opens none over 503" in line


@pytest.mark.parametrize("url, said", [
    ("postgresql+nosuch://u:p@127.0.0.1:1/x", "postgresql+nosuch"),
    ("postgresql+nosuch://bench:bench@db.internal:5432/proofbench", "db.internal:5432/proofbench"),
])
def test_a_short_or_common_password_is_masked_where_it_stands_not_inside_other_words(capsys, tmp_path, url, said):
    # every "p" of the line was starred ("***ostgresql+***syco***g"): the asterisks spelled the password out
    code, _, err = cli(capsys, "report", "--out", str(tmp_path / "site"), "--db", url)
    line = one_line(err)
    assert code == 2 and said in line and ":***@" in line, line


def test_a_password_that_starts_or_ends_in_a_sign_is_masked_beside_a_word():
    url = "postgresql+psycopg://bench:-x@127.0.0.1:1/proofbench"
    assert scrub("could not connect as bench with a-x", url) == "could not connect as bench with a***"


def test_a_database_that_fails_midway_is_its_state_not_a_bug(capsys, tmp_path, monkeypatch):
    # a full disk during ingest read "internal error ... (a bug in proofbench)", exit 3
    import sqlite3

    from sqlalchemy.exc import OperationalError
    from test_ingest_labels_again import write

    from proofbench.pipeline import ingest

    def full(*args, **kwargs):  # SQLite's own "database or disk is full" (SQLITE_FULL), as a full disk raises it
        small = sqlite3.connect(":memory:")
        small.execute("CREATE TABLE t (x)")
        small.execute("PRAGMA max_page_count = 2")
        try:
            while True:
                small.execute("INSERT INTO t VALUES (?)", ("x" * 1000,))
        except sqlite3.OperationalError as exc:
            raise OperationalError("INSERT INTO results ...", {}, exc) from None

    def broken(*args, **kwargs):  # a query of proofbench's own that is wrong: still a bug
        try:
            sqlite3.connect(":memory:").execute("SELECT no_such_column FROM sqlite_master")
        except sqlite3.OperationalError as exc:
            raise OperationalError("SELECT ...", {}, exc) from None

    write(tmp_path / "results", "a" * 40)
    monkeypatch.setattr(ingest, "_ingest_file", full)
    code, _, err = cli(capsys, "ingest", str(tmp_path / "results"), "--db", f"sqlite:///{tmp_path / 'x.sqlite'}")
    assert code == 2 and one_line(err) == ("proofbench: the database failed: database or disk is full (free space "
                                           "where the database lies and run again: nothing half-written was stored)")
    monkeypatch.setattr(ingest, "_ingest_file", broken)
    code, _, err = cli(capsys, "ingest", str(tmp_path / "results"), "--db", f"sqlite:///{tmp_path / 'y.sqlite'}")
    assert code == 3 and "no such column: no_such_column (a bug in proofbench" in one_line(err)
