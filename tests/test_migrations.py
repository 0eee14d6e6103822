"""Schema migrations: a database made at the first revision, holding rows, is upgraded to head in
place (rows intact), on SQLite and on a real PostgreSQL server; the models match the head schema.

Generic over later migrations: the rows are written with the first revision's columns (that
revision never changes) and read back after `alembic upgrade head`, whatever lies between.
"""
from __future__ import annotations

import datetime as dt
import importlib
import pkgutil

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from postgres import db_url, postgres_server, postgres_url  # noqa: F401  (fixtures)
from sqlalchemy import MetaData, select
from sqlalchemy.orm import Session

import proofbench.db
from proofbench.cli import main
from proofbench.db.fleet import store_machine
from proofbench.db.models import Base, Benchmark, ClaimRow, Commit, Environment, IngestedFile, Machine, Result
from proofbench.db.session import alembic_config, engine_for, has_schema

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def _revisions(engine) -> tuple[str, str]:
    script = ScriptDirectory.from_config(alembic_config(engine))
    return script.get_base(), script.get_current_head()


def _migrate(engine, revision: str) -> None:
    with engine.begin() as connection:
        config = alembic_config(engine)
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def _current(engine) -> str:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _insert(connection, table, **values) -> int:
    return connection.execute(table.insert().values(**values)).inserted_primary_key[0]


def _fill_first_revision(engine) -> dict[str, int]:
    # Written with Core on the reflected tables: the ORM models describe head, not this revision.
    meta = MetaData()
    meta.reflect(bind=engine)
    t = meta.tables
    with engine.begin() as c:
        ids = {"machine": _insert(c, t["machines"], name="old-box", fingerprint="f" * 16, created_at=WHEN,
                                  profile={"cpu_model": "Old CPU", "gpus": [], "gpu_note": "no GPU: test"})}
        ids["commit"] = _insert(c, t["commits"], hash="c" * 40, subject="old commit", author="a",
                                authored_at=WHEN, committed_at=WHEN, branch="main", position=1)
        ids["environment"] = _insert(c, t["environments"], name="existing-py", python="3.11", requirements={})
        ids["benchmark"] = _insert(c, t["benchmarks"], name="loading.LmdbRead.time_call", version="v1",
                                   subject="loading.lmdb_read", area="loading", metric="time", unit="seconds",
                                   higher_is_better=False, item="sequence", param_names=["variant", "size"],
                                   details={"description": "old"})
        ids["file"] = _insert(c, t["ingested_files"], sha256="0" * 64, path="old.json", results=1,
                              ingested_at=WHEN)
        ids["result"] = _insert(c, t["results"], benchmark_id=ids["benchmark"], machine_id=ids["machine"],
                                commit_id=ids["commit"], environment_id=ids["environment"], file_id=ids["file"],
                                params={"variant": "baseline", "size": "tiny"}, params_key='["baseline", "tiny"]',
                                status="ok", reason="", value=0.5, samples=[0.5, 0.6, 0.4], number=1,
                                started_at=WHEN, duration=1.5, threads=1, profile="smoke", details={})
        c.execute(t["claims"].insert().values(id="old-claim", subject="loading.lmdb_read", variant="optimized",
                                              source="000.txt", quote="5x", kind="speedup", metric="time",
                                              low=5.0, high=5.0, device="any", note=""))
    return ids


def test_a_database_at_the_first_revision_is_upgraded_with_its_rows(db_url):
    engine = engine_for(db_url)
    first, head = _revisions(engine)
    _migrate(engine, first)
    assert _current(engine) == first
    ids = _fill_first_revision(engine)
    assert main(["db", "upgrade", "--db", db_url]) == 0
    assert _current(engine) == head
    with Session(engine) as session:
        machine = session.get(Machine, ids["machine"])
        assert (machine.name, machine.profile["gpu_note"]) == ("old-box", "no GPU: test")
        assert session.get(Commit, ids["commit"]).hash == "c" * 40
        assert session.get(Environment, ids["environment"]).name == "existing-py"
        assert session.get(Benchmark, ids["benchmark"]).details == {"description": "old"}
        assert session.get(IngestedFile, ids["file"]).sha256 == "0" * 64
        result = session.get(Result, ids["result"])
        assert (result.samples, result.value, result.params["variant"]) == ([0.5, 0.6, 0.4], 0.5, "baseline")
        assert result.started_at.replace(tzinfo=dt.timezone.utc) == WHEN  # SQLite drops the zone
        assert session.get(ClaimRow, "old-claim").low == 5.0


def test_an_upgraded_database_takes_new_rows(db_url):
    # After an in-place upgrade, new rows get fresh ids (PostgreSQL's sequences were not reset)
    # and a machine seen with new hardware links to its old row.
    engine = engine_for(db_url)
    first, _ = _revisions(engine)
    _migrate(engine, first)
    ids = _fill_first_revision(engine)
    main(["db", "upgrade", "--db", db_url])
    with Session(engine) as session, session.begin():
        newer = store_machine(session, "old-box", "e" * 16, {"cpu_model": "New CPU"})
        assert newer.id != ids["machine"] and newer.previous_id == ids["machine"]


def test_an_interpreter_path_of_any_length_is_stored(db_url):
    # asv's `existing` environment records the interpreter's full path: a checkout under a long
    # path overflowed environments.python (40 characters) on PostgreSQL until revision 0003.
    engine = engine_for(db_url)
    first, _ = _revisions(engine)
    _migrate(engine, first)
    _fill_first_revision(engine)
    main(["db", "upgrade", "--db", db_url])
    python = "/" + "/".join(["a-checkout-path-longer-than-sixty-characters-to-catch-width-bugs"] * 4) + "/bin/python"
    with Session(engine) as session, session.begin():
        session.add(Environment(name="existing-long", python=python, requirements={}))
    with Session(engine) as session:
        stored = session.scalar(select(Environment.python).where(Environment.name == "existing-long"))
    assert stored == python and len(python) > 200


def test_upgrade_on_an_empty_database_creates_the_schema_and_is_idempotent(db_url, capsys):
    engine = engine_for(db_url)
    assert not has_schema(engine)
    assert main(["db", "upgrade", "--db", db_url]) == 0
    assert main(["db", "upgrade", "--db", db_url]) == 0
    assert has_schema(engine) and _current(engine) == _revisions(engine)[1]
    err = capsys.readouterr().err
    assert "created schema" in err and "schema is current" in err


def test_models_match_the_head_migration(db_url):
    # A model changed without a migration shows up here as a difference. Every module of db/
    # is imported first, so that tables declared beside db/models.py are known too.
    for module in pkgutil.iter_modules(proofbench.db.__path__):
        importlib.import_module(f"proofbench.db.{module.name}")
    engine = engine_for(db_url)
    _migrate(engine, "head")
    with engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []


def test_upgrade_refuses_an_unreachable_database_with_a_masked_password(capsys):
    url = "postgresql+psycopg://user:secret@127.0.0.1:1/none"
    assert main(["db", "upgrade", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "cannot reach database" in err and "secret" not in err and "***" in err
    assert err.count("\n") == 1  # one line, not a traceback


def test_an_older_schema_is_upgraded_only_where_nobody_else_can_be_locked_out(db_url, capsys, tmp_path):
    """A command that only reads refuses an older schema and leaves it as it was (once upgraded,
    older proofbench versions refuse the database); so does any command on a shared (PostgreSQL)
    database. A command that writes to a SQLite file upgrades it in place; `db upgrade` anything."""
    engine = engine_for(db_url)
    first, head = _revisions(engine)
    _migrate(engine, first)
    _fill_first_revision(engine)
    capsys.readouterr()
    for reading in (["report", "--out", str(tmp_path / "site")], ["alerts", "list"], ["table"],
                    ["check", "--no-git", "--no-record"], ["compare", "old-box", "other"]):
        assert main([*reading, "--db", db_url]) == 2, reading
        assert "is older than this proofbench's" in capsys.readouterr().err and _current(engine) == first, reading
    shared = not db_url.startswith("sqlite")
    assert main(["alerts", "ack", "1", "--db", db_url]) == 2  # no such alert, or a shared database refused
    assert ("a shared database is upgraded only by `proofbench db upgrade`" in capsys.readouterr().err) == shared
    assert _current(engine) == (first if shared else head)
    assert main(["db", "upgrade", "--db", db_url]) == 0 and _current(engine) == head
