"""Hostile and broken input outside results files: database URLs, databases, claims, profiles, the
project file, the report's data, --bench, environment variables, the site directory.

Every case runs the real command line (in this process, `proofbench.cli.main`) and checks that
it ends with 0, or with 2 and one line naming the file, field and value; never a traceback,
never a password, nothing stored changed and nothing written outside the chosen output.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, make_project
from postgres import db_url, postgres_server, postgres_url  # noqa: F401  (fixtures)
from test_declarations import CLAIM as DECLARED_CLAIM
from test_report_site import HOSTILE_MACHINE, make_db

from proofbench.cli import main
from proofbench.db.session import masked, scrub, secrets

SECRET = "Zq9-s3cret"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("proofbench:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
        code, out, err = _run(capsys, *argv)
        assert code == 2, err
        assert SECRET not in out + err and "s3cret" not in out + err
        line = _one_line(err) if command[-1] != "json" else json.loads(out)["error"]
        assert "database" in line or "URL" in line, line
        monkeypatch.delenv("PROOFBENCH_DB", raising=False)


# -- databases: read-only, newer, not proofbench's ---------------------------------------

@pytest.fixture(scope="module")
def site_db(tmp_path_factory) -> Path:
    """The report tests' database (two machines, thirty commits), made once; copy it before changing it."""
    path = tmp_path_factory.mktemp("hostile-db") / "report.sqlite"
    make_db(f"sqlite:///{path}")
    _sql(path, "PRAGMA wal_checkpoint(TRUNCATE)")  # one file, nothing beside it, as a copied database is
    return path


def _sql(path: Path, statement: str, *values) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(statement, values)


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
    before = _digest(db)
    (tmp_path / "empty").mkdir()
    db.chmod(0o444)
    folder.chmod(0o555)
    try:
        url = f"sqlite:///{db}"
        for name, argv in READING.items():
            done = _cli(prefix, *(a.format(out=tmp_path / "site") for a in argv), "--db", url, cwd=tmp_path)
            expected = 1 if name.startswith("check") else 0  # the database holds a regression
            assert done.returncode == expected and "Traceback" not in done.stderr, (name, done.stderr)
        assert (tmp_path / "site" / "index.html").is_file()
        assert "2 new regression(s)" in _cli(prefix, *READING["check"], "--db", url, cwd=tmp_path).stdout
        for name, argv in WRITING.items():
            done = _cli(prefix, *(a.format(empty=tmp_path / "empty") for a in argv), "--db", url, cwd=tmp_path)
            assert done.returncode == 2, (name, done.stderr)
            assert "cannot write the database" in _one_line(done.stderr)
        assert _digest(db) == before and sorted(p.name for p in folder.iterdir()) == ["report.sqlite"]
        folder.chmod(0o755)
        old = folder / "old.sqlite"
        _first_revision(f"sqlite:///{old}")
        folder.chmod(0o555)
        done = _cli(prefix, "report", "--out", str(tmp_path / "site"), "--db", f"sqlite:///{old}", cwd=tmp_path)
        assert done.returncode == 2 and "is read-only here and its schema (0001) is older" in _one_line(done.stderr)
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
    _sql(path, "UPDATE alembic_version SET version_num = '9999_from_the_future'")


def _foreign(path: Path) -> None:
    path.unlink()
    _sql(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")


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
    code, _, err = _run(capsys, "db", "upgrade", "--db", db_url)
    if db_url.startswith("sqlite"):  # a SQLite file is one application's
        assert code == 2 and "is not a proofbench database (it holds other tables: invoices)" in _one_line(err)
        return
    assert code == 0, err  # a PostgreSQL database may be shared: proofbench's tables go beside the others
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_newer'"))
    code, _, err = _run(capsys, "report", "--out", str(tmp_path / "site"), "--db", db_url)
    assert code == 2 and "has schema revision '9999_newer'" in _one_line(err)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE alembic_version"))
    code, _, err = _run(capsys, "db", "upgrade", "--db", db_url)
    assert code == 2 and "is not a proofbench database (it holds other tables: alerts," in _one_line(err)
    engine.dispose()


@pytest.mark.parametrize("command", [*READING.values(), *WRITING.values()], ids=[*READING, *WRITING])
@pytest.mark.parametrize("case", DATABASES, ids=DATABASES)
def test_a_database_proofbench_cannot_use_is_one_line_and_left_as_it_was(capsys, site_db, tmp_path, case, command):
    db = tmp_path / "db.sqlite"
    shutil.copyfile(site_db, db)
    spoil, message = DATABASES[case]
    spoil(db)
    before = _digest(db)
    (tmp_path / "empty").mkdir()
    argv = [a.format(out=tmp_path / "site", empty=tmp_path / "empty") for a in command]
    code, out, err = _run(capsys, *argv, "--db", f"sqlite:///{db}")
    assert code == 2
    assert message in (json.loads(out)["error"] if "json" in argv else _one_line(err))
    assert _digest(db) == before and not (tmp_path / "site").exists()


# -- claims, profiles and the project file ---------------------------------------------

CLAIM = DECLARED_CLAIM.replace("low = 5.0", "low = 2.0\nhigh = 3.0")
MEMORY = CLAIM.replace('kind = "speedup"', 'kind = "memory_reduction"').replace(
    'metric = "time"', 'metric = "peak_memory"').replace("low = 2.0\nhigh = 3.0", "low = 0.3\nhigh = 0.5")
BAD_CLAIMS = {  # claims file -> what the one line says after the file and the claim
    "low-true": (CLAIM.replace("low = 2.0", "low = true"), "key 'low' must be a number (finite; true is not one), "
                 "got True"),
    "low-nan": (CLAIM.replace("low = 2.0", "low = nan"), "key 'low' must be a number (finite; true is not one), "
                "got nan"),
    "high-inf": (CLAIM.replace("high = 3.0", "high = inf"), "key 'high' must be a number"),
    "low-huge-integer": (CLAIM.replace("low = 2.0", "low = " + "9" * 400), "got an integer of 400 digits"),
    "zero-speedup": (CLAIM.replace("low = 2.0", "low = 0"), "key 'low' is a speedup factor and must be above 0"),
    "negative-speedup": (CLAIM.replace("low = 2.0", "low = -2.0"), "must be above 0, got -2.0"),
    "negative-rate": (CLAIM.replace('kind = "speedup"', 'kind = "throughput"').replace('"time"', '"items"')
                      .replace("low = 2.0", "low = -5"), "key 'low' is a rate in items/s and must be above 0"),
    "150%-less-memory": (MEMORY.replace("high = 0.5", "high = 1.5"), "key 'high' is a fraction of memory saved, "
                         "above 0 and below 1 (0.3 = 30% less), got 1.5"),
    "100%-less-memory": (MEMORY.replace("low = 0.3", "low = 1.0").replace("high = 0.5", "high = 1.0"),
                         "key 'low' is a fraction of memory saved"),
    "percent-not-fraction": (MEMORY.replace("low = 0.3", "low = 30").replace("high = 0.5", "high = 50"), "got 30"),
    "high-below-low": (CLAIM.replace("high = 3.0", "high = 1.5"), "key 'high' (1.5) is below 'low' (2)"),
    "quality-with-figure": (CLAIM.replace('kind = "speedup"', 'kind = "quality"'),
                            "a quality claim carries no figure"),
    "unknown-subject": (CLAIM.replace('subject = "loading.lmdb_read"', 'subject = "loading.nope"'),
                        "unknown subject 'loading.nope'"),
    "unknown-variant": (CLAIM.replace('variant = "optimized"', 'variant = "turbo"'),
                        "subject loading.lmdb_read has no variant 'turbo'"),
    "unknown-metric": (CLAIM.replace('metric = "time"', 'metric = "latency"'),
                       "key 'metric' 'latency' is not measured by loading.lmdb_read for a speedup claim; expected time"),
    "untracked-memory": (MEMORY.replace("loading.lmdb_read", "loading.fasta_to_lmdb"),
                         "key 'metric' 'peak_memory' is not measured by loading.fasta_to_lmdb"),
    "stray-claims-table": (CLAIM + CLAIM.replace("[[claim]]", "[[claims]]"), "unknown top-level key 'claims'"),
    "not-a-table": ("claim = [1, 2]\n", "claim #1: must be a table ([[claim]]), got int"),
    "note-not-text": (CLAIM + "note = 5\n", "key 'note' must be a string"),
    "long-id": (CLAIM.replace('id = "a"', f'id = "{"x" * 300}"'), "key 'id' has 300 characters; at most 200"),
    "deeply-nested": (CLAIM + "note = " + "[" * 50_000 + "]" * 50_000 + "\n", "not valid TOML: nested too deeply"),
    "huge-integer-literal": (CLAIM.replace("low = 2.0", "low = " + "9" * 5000), "not valid TOML: Exceeds the limit"),
    "not-utf8": (CLAIM.replace("5x faster", "5x f\udcffaster"), "not valid TOML: not UTF-8 text"),
}


def _project_with(tmp_path: Path, **files: str | bytes) -> Path:
    project = make_project(tmp_path / "project")
    keys = "".join(f'{key} = "{key}.toml"\n' for key in files)
    (project / "proofbench.toml").write_text(f'subjects = ["proofbench.subjects.loading"]\n{keys}')
    for key, text in files.items():
        path = project / f"{key}.toml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
    return project


@pytest.mark.parametrize("case", BAD_CLAIMS, ids=BAD_CLAIMS)
def test_a_bad_claim_is_one_line_naming_file_claim_and_key(capsys, tmp_path, case):
    text, message = BAD_CLAIMS[case]
    project = _project_with(tmp_path, claims=text)
    code, _, err = _run(capsys, "generate", "--check", "--project", str(project))
    line = _one_line(err)
    assert code == 2 and line.startswith(f"proofbench: {project / 'claims.toml'}: ") and message in line, line
    if "claim" in text and case not in ("stray-claims-table", "deeply-nested", "huge-integer-literal", "not-utf8"):
        assert "claim #1" in line or "claim '" in line  # which claim


def test_the_seed_claims_pass_every_rule(capsys):
    code, _, err = _run(capsys, "generate", "--check", "--project", str(REPO))
    assert code == 0, err


PROFILE = """[mine]
description = "one line"
device = "cpu"
threads = 1
sizes = ["tiny"]
rounds = 1
repeat = [3, 5, 1.0]
warmup_time = 0.0
"""
BAD_PROFILES = {
    "threads-true": (PROFILE.replace("threads = 1", "threads = true"), "[mine].threads has the wrong type (bool)"),
    "threads-100000": (PROFILE.replace("threads = 1", "threads = 100000"),
                       "threads must be a whole number from 0 to 1024, got 100000"),
    "threads-negative": (PROFILE.replace("threads = 1", "threads = -1"), "threads must be a whole number"),
    "threads-float": (PROFILE.replace("threads = 1", "threads = 1.5"), "[mine].threads has the wrong type (float)"),
    "warmup-negative": (PROFILE.replace("warmup_time = 0.0", "warmup_time = -1.0"),
                        "warmup_time must be a number of seconds at least 0"),
    "warmup-nan": (PROFILE.replace("warmup_time = 0.0", "warmup_time = nan"), "warmup_time must be a number"),
    "warmup-inf": (PROFILE.replace("warmup_time = 0.0", "warmup_time = inf"), "got inf"),
    "warmup-true": (PROFILE.replace("warmup_time = 0.0", "warmup_time = true"), "[mine].warmup_time has the wrong"),
    "repeat-negative-seconds": (PROFILE.replace("[3, 5, 1.0]", "[3, 5, -1.0]"),
                                "repeat[2] (max seconds) must be a number of seconds above 0"),
    "repeat-zero-seconds": (PROFILE.replace("[3, 5, 1.0]", "[3, 5, 0]"), "repeat[2] (max seconds)"),
    "repeat-text": (PROFILE.replace("[3, 5, 1.0]", '["a", 5, 1.0]'), "repeat[0] (min samples) must be a whole"),
    "repeat-true": (PROFILE.replace("[3, 5, 1.0]", "[true, 5, 1.0]"), "got True"),
    "repeat-min-above-max": (PROFILE.replace("[3, 5, 1.0]", "[6, 5, 1.0]"), "repeat[1] (max samples) must be a "
                             "whole number from 6"),
    "rounds-zero": (PROFILE.replace("rounds = 1", "rounds = 0"), "rounds must be a whole number from 1 to 1000"),
    "sizes-twice": (PROFILE.replace('["tiny"]', '["tiny", "tiny"]'), "sizes must be distinct names"),
    "sizes-numbers": (PROFILE.replace('["tiny"]', "[1]"), "sizes must be distinct names among tiny, small, large"),
    "description-newline": (PROFILE.replace('"one line"', '"""two\nlines"""'), "description must be one line"),
    "bench-not-a-regex": (PROFILE + 'bench = "("\n', "bench '(' is not a regular expression"),
    "name-with-a-space": (PROFILE.replace("[mine]", '["my profile"]'), "profile 'my profile': a name is 1-50"),
    "name-too-long": (PROFILE.replace("[mine]", f"[{'p' * 51}]"), "a name is 1-50 letters"),
    "unknown-key": (PROFILE + "colour = 1\n", "[mine] has unknown key(s) colour"),
    "deeply-nested": (PROFILE + "x = " + "[" * 50_000 + "]" * 50_000 + "\n", "not valid TOML: nested too deeply"),
}


@pytest.mark.parametrize("case", BAD_PROFILES, ids=BAD_PROFILES)
def test_a_bad_profile_is_one_line_naming_file_profile_and_key(capsys, tmp_path, case):
    text, message = BAD_PROFILES[case]
    project = _project_with(tmp_path, profiles=text)
    db = tmp_path / "db.sqlite"
    code, _, err = _run(capsys, "run", "--profile", "mine", "--project", str(project), "--db", f"sqlite:///{db}")
    line = _one_line(err)
    assert code == 2 and line.startswith(f"proofbench: {project / 'profiles.toml'}: ") and message in line, line
    assert not db.exists() and not (project / "benchmarks").exists()  # refused before anything was written


def test_the_builtin_profiles_pass_every_rule():
    from proofbench.profile import profiles

    assert set(profiles()) >= {"smoke", "quick", "full", "gpu"}


BAD_PROJECTS = {  # proofbench.toml (or pyproject.toml) -> the one line
    "tool-not-a-table": ("pyproject.toml", 'tool = "proofbench"\n', "no proofbench.toml"),
    "tool-proofbench-not-a-table": ("pyproject.toml", "[tool]\nproofbench = 3\n", "[tool.proofbench] must be a table"),
    "deeply-nested": ("proofbench.toml", "subjects = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply"),
    "not-utf8": ("proofbench.toml", b'subjects = ["\xff"]\n', "not valid TOML: not UTF-8 text (byte 13)"),
    "subjects-not-modules": ("proofbench.toml", 'subjects = ["../evil"]\n', "subjects must be a non-empty list"),
    "path-with-nul": ("proofbench.toml", 'subjects = ["a"]\nsite = "a\\u0000b"\n', "site must be a path"),
    "database-not-text": ("proofbench.toml", 'subjects = ["a"]\ndatabase = 5\n', "database must be a database URL"),
    "min-step-nan": ("proofbench.toml", 'subjects = ["a"]\n[check]\nmin_step = nan\n', "check.min_step must be"),
    "significance-true": ("proofbench.toml", 'subjects = ["a"]\n[check]\nsignificance = true\n',
                          "check.significance must be a probability"),
    "unknown-key": ("proofbench.toml", 'subjects = ["a"]\nsubject = ["b"]\n', "unknown key 'subject'"),
}


@pytest.mark.parametrize("case", BAD_PROJECTS, ids=BAD_PROJECTS)
def test_a_bad_project_file_is_one_line_naming_it(capsys, tmp_path, case):
    name, text, message = BAD_PROJECTS[case]
    (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    code, _, err = _run(capsys, "generate", "--check", "--project", str(tmp_path))
    line = _one_line(err)
    assert code == 2 and message in line and (str(tmp_path / name) in line or "no proofbench.toml" in line), line


@pytest.mark.parametrize("key", ["claims", "profiles"])
@pytest.mark.parametrize("kind", ["directory", "fifo", "missing", "too-large"])
def test_a_claims_or_profiles_path_that_is_no_readable_file_is_one_line(capsys, tmp_path, key, kind):
    from proofbench.tomlfile import MAX_BYTES

    project = _project_with(tmp_path, **{key: ""})
    path = project / f"{key}.toml"
    path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # read, it would wait for a writer forever
    elif kind == "too-large":
        with path.open("wb") as fh:
            fh.truncate(MAX_BYTES + 1)
    code, _, err = _run(capsys, "run", "--profile", "mine" if key == "profiles" else "smoke", "--project",
                        str(project), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    expected = {"directory": "is not a regular file", "fifo": "is not a regular file", "missing": "not found",
                "too-large": f"has {MAX_BYTES + 1} bytes; at most {MAX_BYTES} are read"}[kind]
    assert code == 2 and f"proofbench: {path}: {key} file {expected}" == _one_line(err)
    assert not (tmp_path / "db.sqlite").exists()


# -- the report and the terminal: values and text from data ------------------------------

EVIL = "box[/] [bold]x[/bold] \x00nul \u202eevil\u202c \x1b[31mred\x1b]0;title\x07"  # markup, NUL, RLO, escapes


@pytest.fixture(scope="module")
def hostile_db(site_db, tmp_path_factory) -> Path:
    """The report database with what no run writes but a database may hold: a result of 1e308,
    claims with NaN, infinite and impossible figures, control and bidirectional characters and
    rich markup in names, subjects and reasons."""
    db = tmp_path_factory.mktemp("hostile-report") / "hostile.sqlite"
    shutil.copyfile(site_db, db)
    huge = json.dumps([1e308] * 7)
    for statement, values in [
        ("UPDATE machines SET name = ? WHERE name = 'ci-box'", (EVIL,)),
        ("UPDATE commits SET subject = ?", (EVIL,)),
        ("UPDATE results SET reason = ? WHERE status != 'ok'", (EVIL,)),
        ("UPDATE benchmarks SET details = json_set(details, '$.description', ?)", (EVIL,)),
        ("UPDATE results SET value = 1e308, samples = ? WHERE id IN (SELECT r.id FROM results r JOIN benchmarks b "
         "ON b.id = r.benchmark_id WHERE b.metric = 'time' AND r.params_key LIKE '%baseline%' AND r.status = 'ok' "
         "ORDER BY r.id DESC LIMIT 3)", (huge,)),
        ("UPDATE results SET value = 5e-324 WHERE id = (SELECT max(id) FROM results WHERE status = 'ok')", ()),
        ("INSERT INTO claims VALUES ('nan-low', 'loading.lmdb_read', 'optimized', 's', 'q', 'speedup', 'time', "
         "NULL, NULL, 'any', '')", ()),  # NaN is stored as NULL by SQLite
        ("INSERT INTO claims VALUES ('inf-low', 'loading.lmdb_read', 'optimized', 's', 'q', 'speedup', 'time', "
         "9e999, 9e999, 'any', '')", ()),
        ("INSERT INTO claims VALUES ('rate-without-low', 'loading.lmdb_read', 'optimized', 's', 'q', 'throughput', "
         "'items', NULL, 5, 'any', '')", ()),
        ("INSERT INTO claims VALUES ('150%-less', 'loading.lmdb_read', 'optimized', 's', 'q', 'memory_reduction', "
         "'peak_memory', 1.5, 1.5, 'any', '')", ()),
        ("INSERT INTO claims VALUES (?, 'loading.lmdb_read', 'optimized', ?, ?, 'speedup', 'time', 1e305, 1e305, "
         "'any', ?)", ("huge-" + EVIL, EVIL, EVIL, EVIL)),
    ]:
        _sql(db, statement, *values)
    return db


def _no_raw_controls(text: str) -> None:
    for character in ("\x00", "\u202e", "\u202c", "\x1b", "\x07"):
        assert character not in text, repr(character)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow is shown as infinite, not warned about
def test_the_report_renders_around_values_it_cannot_draw_and_shows_no_raw_control_characters(
        capsys, hostile_db, tmp_path):
    out = tmp_path / "site"
    code, stdout, err = _run(capsys, "report", "--out", str(out), "--db", f"sqlite:///{hostile_db}")
    assert code == 0 and err == "", err
    pages = {p.name: p.read_text() for p in out.rglob("*.html")}
    for page in pages.values():
        _no_raw_controls(page)
    every = "\n".join(pages.values())
    assert "&lt;U+202E&gt;evil" in every and "&lt;U+0000&gt;nul" in every and "box[/] [bold]x[/bold]" in every
    assert "1e+308 s" in every and "↕ marks a value too large or too small to draw" in every
    ledger = pages["claims.html"]
    for left_out in ("nan-low", "inf-low", "rate-without-low", "150%-less"):
        assert f"<code>{left_out}</code>" in ledger
    assert "claimed 1e+305×" not in every  # a promise no axis can hold is not drawn as a rule


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_terminal_output_shows_text_from_data_as_written(capsys, hostile_db):
    from sqlalchemy import create_engine

    from proofbench.analysis.verdict import judge  # noqa: F401  (the table judges claims)
    from proofbench.claim import Claim
    from proofbench.reports import table

    url = f"sqlite:///{hostile_db}"
    code, out, err = _run(capsys, "compare", EVIL, HOSTILE_MACHINE, "--db", url)
    assert code == 0, err
    _no_raw_controls(out)
    assert "box[/] [bold]x[/bold] <U+0000>nul <U+202E>evil" in out
    code, out, err = _run(capsys, "check", "--no-record", "--no-git", "--db", url)
    assert code == 1 and "<U+202E>evil" in out, err  # the step in the test history is a regression
    _no_raw_controls(out)
    claim = Claim(id="c", subject="loading.lmdb_read", variant="optimized", source=EVIL, quote=EVIL, kind="speedup",
                  metric="time", low=2.0, high=2.0)
    table.print_latest(create_engine(url), EVIL, (claim,))
    out, _ = capsys.readouterr()
    assert "box[/] [bold]x[/bold]" in out
    _no_raw_controls(out)


def test_an_error_message_shows_control_characters_from_data_as_code_points(capsys, tmp_path):
    missing = tmp_path / f"results-{EVIL.replace(chr(0), '')}.json"  # a file name may hold anything but NUL
    code, _, err = _run(capsys, "ingest", str(missing), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert code == 2 and "<U+001B>[31mred" in _one_line(err) and "no such results file" in err
    _no_raw_controls(err)


# -- run --bench ------------------------------------------------------------------------

def _git_project(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "project")
    env = {**os.environ, "GIT_AUTHOR_NAME": "B", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "B",
           "GIT_COMMITTER_EMAIL": "b@example.invalid", "HOME": str(tmp_path)}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "scratch"]):
        subprocess.run(["git", "-C", str(project), *args], check=True, env=env, capture_output=True)
    return project


@pytest.mark.parametrize("bench, message", [
    ("(", "--bench '(': not a regular expression (missing ), unterminated subpattern at position 0)"),
    ("nothing-is-called-this", "--bench 'nothing-is-called-this': no benchmark matched"),
    (r"LmdbRead.*'large'", "no benchmark matched"),  # a size the profile does not run
    ("--output=/tmp/x", "no benchmark matched"),
])
def test_a_bench_that_selects_nothing_is_refused_before_asv_runs(capsys, monkeypatch, tmp_path, bench, message):
    from proofbench.pipeline import runner

    project = _git_project(tmp_path)
    monkeypatch.setattr(runner, "drive", lambda *a, **k: pytest.fail("asv was started"))
    db = tmp_path / "db.sqlite"
    code, _, err = _run(capsys, "run", "--profile", "smoke", f"--bench={bench}", "--no-report", "--project",
                        str(project), "--db", f"sqlite:///{db}")
    assert code == 2 and message in _one_line(err)
    with contextlib.closing(sqlite3.connect(db)) as con:
        assert con.execute("SELECT count(*) FROM results").fetchone() == (0,)


def test_a_results_file_asv_did_not_write_is_not_taken_as_new(monkeypatch, tmp_path):
    from proofbench import git, project
    from proofbench.machine.capture import capture
    from proofbench.pipeline import runner
    from proofbench.pipeline.asv import Layout, Log
    from proofbench.profile import get_profile

    layout = Layout.of(project.load(_git_project(tmp_path) / "proofbench.toml"))
    machine = capture("box")
    old = layout.results / "box" / f"{git.head(layout.project.root)[:8]}-existing-py.json"
    old.parent.mkdir(parents=True)
    old.write_text('{"an earlier run": true}')
    os.mkfifo(old.with_name(old.name.replace("existing", "fifo")))  # never read: it would be waited on
    monkeypatch.setattr(runner, "drive", lambda *a, **k: Log(0, ()))  # asv ran, matched nothing, wrote nothing
    assert runner.run(layout, get_profile("smoke"), machine).results == ()

    def rewrites(*args, **kwargs):
        old.write_text('{"this run": true}')
        return Log(0, ())

    monkeypatch.setattr(runner, "drive", rewrites)
    assert runner.run(layout, get_profile("smoke"), machine).results == (old,)


def test_values_reach_asv_inside_their_options():
    from proofbench.pipeline import history, runner

    cmd = runner.asv_command("-box", "c" * 40, "--output=/tmp/x", Path("-conf.json"))
    assert "--bench=--output=/tmp/x" in cmd and "--machine=-box" in cmd and "--config=-conf.json" in cmd
    assert not any(part.startswith("--output") for part in cmd)
    cmd = history.asv_command(Path("-c.json"), "-box", Path("h"), "--output=/tmp/x", rerun=False)
    assert "--bench=--output=/tmp/x" in cmd and "--machine=-box" in cmd and cmd[-1] == "HASHFILE:h"


# -- nothing in a results file runs anything ---------------------------------------------

HOSTILE_STRINGS = ("--output=/tmp/proofbench-pwned", "$(touch proofbench-pwned)", "; touch proofbench-pwned",
                   "-c core.fsmonitor=touch proofbench-pwned", "`touch proofbench-pwned`")


@pytest.mark.slow
@pytest.mark.parametrize("commit", ["--output={out}/pwned", "deadbeef" * 5])
def test_nothing_in_a_results_file_reaches_a_subprocess_as_an_option(capsys, monkeypatch, smoke_run, tmp_path, commit):
    layout, outcome = smoke_run
    data = json.loads(outcome.results[0].read_text())
    data.update(commit_hash=commit.format(out=tmp_path), env_name=HOSTILE_STRINGS[1], python=HOSTILE_STRINGS[2],
                requirements={s: s for s in HOSTILE_STRINGS}, env_vars={"PATH": HOSTILE_STRINGS[3]})
    data["params"] = {**data["params"], "machine": HOSTILE_STRINGS[0], "python": HOSTILE_STRINGS[4]}
    folder = tmp_path / "results" / "box"
    folder.mkdir(parents=True)
    (folder / "deadbeef-hostile.json").write_text(json.dumps(data))
    started: list[list[str]] = []
    real_run, real_popen = subprocess.run, subprocess.Popen

    def run(args, *a, **k):
        started.append(list(args))
        return real_run(args, *a, **k)

    class Popen(real_popen):
        def __init__(self, args, *a, **k):
            started.append(list(args))
            super().__init__(args, *a, **k)

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(subprocess, "Popen", Popen)
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "ingest", str(tmp_path / "results"), "--repo", str(REPO), "--sidecar",
                        str(layout.sidecar), "--project", str(REPO), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert code in (0, 2) and "Traceback" not in err
    assert all(argv[0] == "git" for argv in started), started  # git only: nothing builds, installs or runs
    if not commit.startswith("-"):  # a hash: git is asked about it, after --end-of-options
        assert any(argv[-2:] == [commit, "--"] and "--end-of-options" in argv for argv in started), started
    for argv in started:
        after = argv[argv.index("--end-of-options") + 1:] if "--end-of-options" in argv else []
        assert all(value not in argv or value in after for value in (commit, *HOSTILE_STRINGS)), argv
    assert not list(tmp_path.rglob("*pwned*")) and not Path("/tmp/proofbench-pwned").exists()


# -- the site directory -----------------------------------------------------------------

@pytest.mark.parametrize("link", [".proofbench-site", "static", "index.html", "subjects"])
def test_a_symbolic_link_in_the_site_directory_is_never_written_through(capsys, site_db, tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    out = tmp_path / "site"
    out.mkdir()
    (out / ".proofbench-site").write_text("an earlier site")
    target = outside / "precious.txt" if "." in link else outside
    (out / link).unlink(missing_ok=True)
    (out / link).symlink_to(target)
    code, _, err = _run(capsys, "report", "--out", str(out), "--db", f"sqlite:///{site_db}")
    line = _one_line(err)
    assert code == 2 and ("outside" in line or "symbolic link" in line), line
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert (outside / "precious.txt").read_text() == "keep me"


def test_the_site_is_never_written_over_the_database(capsys, site_db, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "db.sqlite"
    shutil.copyfile(site_db, db)
    before = _digest(db)
    for out in (folder, db):
        code, _, err = _run(capsys, "report", "--out", str(out), "--db", f"sqlite:///{db}")
        assert code == 2 and str(out) in _one_line(err)
    # (SQLite's own -wal and -shm lie beside the file while this process holds it open)
    assert _digest(db) == before and {p.name for p in folder.iterdir()} <= {"db.sqlite", "db.sqlite-wal",
                                                                            "db.sqlite-shm"}
    code, _, err = _run(capsys, "report", "--out", str(folder / "site"), "--db", f"sqlite:///{db}")
    assert code == 0, err


def test_names_that_read_alike_get_pages_of_their_own(tmp_path):
    from proofbench.reports.output import SiteWriter, slug

    writer = SiteWriter(tmp_path / "site")
    names = ["a/b", slug("a/b"), "A/B", "a\\b", "a\u202eb", "a\x00b", "." * 300, "index", "../index"]
    pages = [writer.page_name("subjects", name) for name in names]
    assert len({page.lower() for page in pages}) == len(names)
    assert all(page.startswith("subjects/") and "/" not in page[9:] and len(page) < 120 for page in pages)
    assert all(writer.path(page).parent == writer.root / "subjects" for page in pages)


# -- environment variables and the sidecar ------------------------------------------------

@pytest.mark.parametrize("variable, value, message", [
    ("PROOFBENCH_MEMORY_LIMIT", "lots", "PROOFBENCH_MEMORY_LIMIT='lots': expected a positive number of bytes"),
    ("PROOFBENCH_MEMORY_LIMIT", "0", "PROOFBENCH_MEMORY_LIMIT='0'"),
    ("PROOFBENCH_MEMORY_LIMIT", "-1G", "PROOFBENCH_MEMORY_LIMIT='-1G'"),
    ("PROOFBENCH_MEMORY_LIMIT", "9" * 5000, "expected a positive number of bytes up to 1 PiB"),
    ("PROOFBENCH_MEMORY_LIMIT", "99999999999999G", "up to 1 PiB"),  # setrlimit would overflow a C long
    ("PROOFBENCH_MEMORY_LIMIT", "\u0661\u0662M", "expected a positive number"),  # digits, but not ASCII ones
    ("PROOFBENCH_PROFILE", "nosuch", "unknown profile 'nosuch'; expected one of smoke, quick, full, gpu"),
    ("PROOFBENCH_PROFILE", "../../etc/passwd", "unknown profile '../../etc/passwd'"),
    ("PROOFBENCH_PROFILES", "/nonexistent/profiles.toml", "/nonexistent/profiles.toml: profiles file not found"),
    ("PROOFBENCH_PROJECT", "/nonexistent/project", "no proofbench.toml (or [tool.proofbench] in pyproject.toml) "
     "in /nonexistent/project"),
])
def test_an_odd_environment_variable_is_one_line_before_anything_runs(capsys, monkeypatch, tmp_path, variable, value,
                                                                      message):
    from proofbench.pipeline import runner

    project = _git_project(tmp_path)
    monkeypatch.chdir(project if variable != "PROOFBENCH_PROJECT" else tmp_path)
    monkeypatch.setenv(variable, value)
    monkeypatch.setattr(runner, "drive", lambda *a, **k: pytest.fail("asv was started"))
    db = tmp_path / "db.sqlite"
    argv = ["run", "--no-report", "--db", f"sqlite:///{db}"] + ([] if variable == "PROOFBENCH_PROFILE" else
                                                                ["--profile", "smoke"])
    code, _, err = _run(capsys, *argv)
    assert code == 2 and message in _one_line(err)


def test_a_sidecar_line_that_is_no_record_is_passed_over(tmp_path):
    from proofbench.measure import sidecar

    path = tmp_path / "sidecar.jsonl"
    good = sidecar.Record("loading.LmdbRead", ("baseline", "tiny"), "failed", "MemoryError", "c" * 40, "env")
    sidecar.append(path, [good])
    lines = [b"\xff\xfe not UTF-8\n", b"[" * 100_000 + b"\n", b'{"benchmark": 1, "params": [], "status": "ok"}\n',
             b'{"benchmark": "b", "params": [["nested"]], "status": "ok"}\n', b'"just a string"\n',
             b'{"benchmark": "b", "params": [], "status": "ok", "details": []}\n',
             b'{"benchmark": "' + b"x" * (sidecar.MAX_LINE + 10) + b'", "params": [], "status": "ok"}\n']
    with path.open("ab") as fh:
        fh.writelines(lines)
    sidecar.append(path, [good])
    with path.open("ab") as fh:
        fh.write(b'{"benchmark": "torn')  # a killed writer's last line
    assert list(sidecar.read(path)) == [good, good]
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert list(sidecar.read(fifo)) == []  # not waited on


@pytest.mark.parametrize("target", ["the-database", "a-directory"])
def test_compare_never_writes_over_a_database_or_into_a_directory(capsys, site_db, tmp_path, target):
    db = tmp_path / "db.sqlite"
    shutil.copyfile(site_db, db)
    before = _digest(db)
    (tmp_path / "a-directory").mkdir()
    out = db if target == "the-database" else tmp_path / "a-directory"
    code, _, err = _run(capsys, "compare", "ci-box", HOSTILE_MACHINE, "--format", "html", "--out", str(out),
                        "--db", f"sqlite:///{db}")
    assert code == 2 and f"--out {out}: is a" in _one_line(err)
    assert _digest(db) == before and not list((tmp_path / "a-directory").iterdir())


def test_profile_output_that_is_a_file_is_refused_before_profiling(capsys, tmp_path):
    (tmp_path / "a-file").write_text("keep")
    code, _, err = _run(capsys, "profile", "loading.lmdb_read", "--out", str(tmp_path / "a-file"), "--project",
                        str(REPO), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert code == 2 and "is a file; name a directory" in _one_line(err)
    assert (tmp_path / "a-file").read_text() == "keep" and not (tmp_path / "db.sqlite").exists()


# -- what main already refused: verified here ----------------------------------------------

@pytest.mark.parametrize("form", ["text", "json"])
def test_an_internal_error_is_exit_3_in_one_line_and_json_for_json_and_shows_no_password(
        capsys, monkeypatch, tmp_path, form):
    from proofbench.analysis import check

    url = f"sqlite:///{tmp_path / 'db.sqlite'}?uri=true&password={SECRET}"

    def broken(*args, **kwargs):
        raise ZeroDivisionError(f"boom while reading {url}\nsecond line")

    monkeypatch.setattr(check, "run_check", broken)
    monkeypatch.setenv("PROOFBENCH_DB", url)
    code, out, err = _run(capsys, "check", "--no-git", "--format", form)
    line = _one_line(err)
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
    code, _, err = _run(capsys, "report", "--out", target, "--db", f"sqlite:///{db}")
    line = _one_line(err)
    assert code == 2 and ("is a file, not a directory" in line or "is not empty and holds no earlier proofbench site"
                          in line), line
    assert sorted(p.name for p in Path(target).parent.iterdir() if not p.name.startswith("db.sqlite-")) == \
        [n for n in before if not n.startswith("db.sqlite-")]


def test_a_loop_of_symbolic_links_is_one_line(capsys, site_db, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    code, _, err = _run(capsys, "report", "--out", str(loop), "--db", f"sqlite:///{site_db}")
    assert code == 2 and "a loop of symbolic links" in _one_line(err)
    code, _, err = _run(capsys, "generate", "--check", "--project", str(loop))
    assert code == 2 and "a loop of symbolic links" in _one_line(err)


def test_a_stored_trace_path_publishes_no_other_file(capsys, site_db, tmp_path):
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    db = tmp_path / "db.sqlite"
    shutil.copyfile(site_db, db)
    _sql(db, "UPDATE variant_profiles SET traces = json_object('python', ?, 'torch', ?)", str(secret), "/etc/passwd")
    code, _, err = _run(capsys, "report", "--out", str(tmp_path / "site"), "--db", f"sqlite:///{db}")
    assert code == 0, err
    published = [p.read_text(errors="replace") for p in (tmp_path / "site").rglob("*") if p.is_file()]
    assert not any("PRIVATE KEY" in text or "root:x:0:0" in text for text in published)
