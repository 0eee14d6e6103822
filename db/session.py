"""Engines and schema management: a database URL in, a migrated database out.

Any SQLAlchemy URL works: a SQLite file for one machine, `postgresql+psycopg://...` for a fleet
sharing one database (which URL a command uses is the project's business: proofbench.project). SQLite runs in WAL mode with a
busy timeout so several ingesting processes can share the file.
"""
from __future__ import annotations

import re
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError

from proofbench.errors import DatabaseError

ROOT = Path(__file__).resolve().parent
BUSY_TIMEOUT_MS = 30_000
MIGRATION_LOCK = 0x70726F6F66  # PostgreSQL advisory lock key ("proof") held while migrating


def masked(url: str) -> str:
    """The URL with its password replaced by ***, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # Let SQLAlchemy emit BEGIN itself (see _sqlite_begin) instead of pysqlite's deferred one.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # In WAL mode NORMAL keeps every transaction atomic and survives a killed process; only a power
    # loss may undo the last ones. FULL's fsync per transaction cost ingest (one per file) 40%.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(connection) -> None:
    # A writer takes the lock when its transaction starts, so two ingesting processes wait
    # for each other (busy timeout) instead of failing on a read-to-write lock upgrade.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def engine_for(url: str) -> Engine:
    """An engine for `url`; raises DatabaseError (password masked) if it cannot connect."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(f"not a database URL: {masked(url)}") from None
    kwargs = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            try:
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseError(f"cannot create the directory of {masked(url)}: {exc.strerror}") from None
        kwargs["connect_args"] = {"timeout": BUSY_TIMEOUT_MS / 1000}
    try:
        engine = create_engine(url, **kwargs)
    except (ArgumentError, ImportError) as exc:
        raise DatabaseError(f"cannot use database {masked(url)}: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
    try:
        with engine.connect():
            pass
    except (OperationalError, SQLAlchemyError) as exc:
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise DatabaseError(f"cannot reach database {masked(url)}: {reason}") from None
    return engine


def alembic_config(engine: Engine) -> Config:
    """Alembic configured for this package's migrations and the given engine."""
    config = Config()
    config.set_main_option("script_location", str(ROOT / "migrations"))
    config.attributes["connection"] = None
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (creating it on an empty database)."""
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # SQLite alters a column by copying its table and dropping the old one, which enforced
            # foreign keys forbid; the pragma only takes effect outside a transaction.
            connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    # Fleet members may start on a fresh database at once: one migrates, the others
                    # wait here until it commits and then find nothing to do (SQLite's BEGIN
                    # IMMEDIATE does this).
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
                config = alembic_config(engine)
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        finally:
            if sqlite:
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=ON")


def connect(url: str, migrate: bool = True) -> Engine:
    """An engine on a database whose schema is current."""
    engine = engine_for(url)
    if migrate:
        upgrade(engine)
    return engine


def has_schema(engine: Engine) -> bool:
    """True when the database already holds proofbench's tables."""
    return inspect(engine).has_table("results")
