"""Engines and schema management: a database URL in, a migrated database out.

Any SQLAlchemy URL works: a SQLite file for one machine, `postgresql+psycopg://...` for a fleet
sharing one database (which URL a command uses is the project's business: proofbench.project).
SQLite runs in WAL mode with a busy timeout so several ingesting processes can share the file. A
SQLite file this process may not write is opened read-only, for the commands that only read; no
message ever shows a password. A command upgrades an older schema itself only where nobody else
can be locked out by it (`upgrade`); `proofbench db upgrade` upgrades any.
"""
from __future__ import annotations

import os
import re
import sqlite3
import time
import warnings
import weakref
from pathlib import Path
from urllib.parse import unquote_plus, urlencode

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SAWarning, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from proofbench.errors import DatabaseError

ROOT = Path(__file__).resolve().parent
BUSY_TIMEOUT_MS = 30_000
MIGRATION_LOCK = 0x70726F6F66  # PostgreSQL advisory lock key ("proof") held while migrating
_SECRET_NAME = re.compile(r"pass|pwd|secret|token|credential", re.IGNORECASE)  # query parameters masked
_QUERY_PARAM = re.compile(r"([?&][^=&#]*=)([^&#]*)")
_AS_TYPED: weakref.WeakKeyDictionary[Engine, str] = weakref.WeakKeyDictionary()  # a read-only file's URL as given


def _password_spans(url: str) -> list[tuple[int, int]]:
    # Where the passwords of `url` lie: values of query parameters named like one, wherever they
    # are, and the user part's after its ':' up to the last '@' outside those values (a password
    # may hold an unencoded '@', '/' or '?'); a URL without a scheme is read the same way.
    spans = [m.span(2) for m in _QUERY_PARAM.finditer(url) if _SECRET_NAME.search(m.group(1))]
    scheme = url.find("://")
    start = scheme + 3 if scheme >= 0 else 0
    at = next((i for i in range(len(url) - 1, start - 1, -1)
               if url[i] == "@" and not any(a <= i < b for a, b in spans)), -1)
    colon = url.find(":", start, at) if at >= 0 else -1
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans + ([(colon + 1, at)] if colon >= 0 else [])):
        if merged and a <= merged[-1][1]:  # one inside or touching another: one span
            first, end = merged.pop()
            a, b = first, max(b, end)
        merged.append((a, b))
    return merged


def masked(url: str) -> str:
    """The URL with every password replaced by ***: the user part's and any query parameter
    named like one (`?password=`), whether or not the URL parses."""
    for a, b in reversed(_password_spans(url)):
        url = url[:a] + "***" + url[b:]
    return url


def secrets(url: str) -> list[str]:
    """Every password in `url`, as written and decoded, with each part after an '@' in one
    (a driver that misreads `p@ss@host` names `ss@host`); longest first."""
    found = [url[a:b] for a, b in _password_spans(url)]
    found += [unquote_plus(s) for s in found]
    parts = {s.split("@", i)[-1] for s in found for i in range(s.count("@") + 1)}
    return sorted((s for s in parts if s), key=len, reverse=True)


def scrub(message: str, url: str) -> str:
    """`message` (a driver's words, say) with every password of `url` in it replaced by ***,
    where it stands on its own: not inside a longer word (a password `p` or `bench` made
    "***ostgresql+***syco***g" and "proof***" of the rest, whose asterisks spelled it out)."""
    for secret in secrets(url):
        before = "(?<![A-Za-z0-9])" if secret[0].isalnum() else ""  # "-x" is its own word after "a"
        after = "(?![A-Za-z0-9])" if secret[-1].isalnum() else ""
        message = re.sub(before + re.escape(secret) + after, "***", message)
    return message


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # Let SQLAlchemy emit BEGIN itself (see _sqlite_begin) instead of pysqlite's deferred one.
    # (WAL mode is a property of the file, set once by `upgrade`: a file that turns out not to be
    # proofbench's is left as it was.)
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
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


def _sqlite_read_only(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # BEGIN comes from _sqlite_begin_reading


def _sqlite_begin_reading(connection) -> None:
    connection.exec_driver_sql("BEGIN")


def _read_only_path(path: Path | None) -> Path | None:
    # A SQLite file that exists and that this process may not write (nor may it make its journal
    # beside it): it is read as it is, and only by commands that read.
    if path is None or not path.is_file():
        return None
    return None if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK) else path.resolve()


def _named_file(parsed) -> Path | None:
    # The SQLite file a URL names: its path, or a `file:` URI's where `uri=true` asks SQLite to
    # read it as one (file:/abs, file:///abs, file://host/abs, file:rel); None for a database in
    # memory, or a `file:` name SQLite is not told to read as a URI.
    database = parsed.database or ""
    if not database.startswith("file:"):
        return Path(database) if database not in ("", ":memory:") else None
    if parsed.query.get("uri") not in ("true", "1") or parsed.query.get("mode") == "memory":
        return None
    rest = database[len("file:"):]
    if rest.startswith("//"):
        rest = "/" + rest[2:].partition("/")[2]
    return Path(rest) if rest not in ("", ":memory:") else None


def _sqlite_engine(url: str, parsed, create: bool, write: bool = True) -> Engine:
    named = _named_file(parsed)
    path = None if (parsed.database or "").startswith("file:") else named  # a plain path (a URI is opened as given)
    read_only = _read_only_path(named)
    if read_only is None:
        if named is not None and not create and not named.exists():
            full = "" if named.is_absolute() else f" ({named.absolute()}: a relative path is read from here)"
            raise DatabaseError(f"{masked(url)}: no such database{full}; nothing has been measured into it "
                                f"(`proofbench run`, `history` or `ingest` make it; is the path right?)")
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseError(f"cannot create the directory of {masked(url)}: {exc.strerror}") from None
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin if write else _sqlite_begin_reading)
        return engine
    # Without a -shm file beside it no writer has the file open, and SQLite can read a WAL
    # database it cannot write only as immutable.
    # A URI's other parameters (a VFS, a cache) are kept.
    kept = {k: v for k, v in parsed.query.items() if k not in ("mode", "immutable", "uri")}
    flags = urlencode({**kept, "mode": "ro", **({} if Path(f"{read_only}-shm").exists() else {"immutable": 1})},
                      doseq=True)
    engine = create_engine(f"sqlite:///file:{read_only}?{flags}&uri=true")
    _AS_TYPED[engine] = url
    event.listen(engine, "connect", _sqlite_read_only)
    event.listen(engine, "begin", _sqlite_begin_reading)
    return engine


def read_only(engine: Engine) -> bool:
    """True for a SQLite file opened read-only (see engine_for)."""
    return engine.url.get_backend_name() == "sqlite" and engine.url.query.get("mode") == "ro"


def engine_for(url: str, create: bool = True, write: bool = True) -> Engine:
    """An engine for `url`; raises DatabaseError (password masked) if it cannot connect, or, where
    `create` is False, if it names a SQLite file that does not exist (a command that reads what
    was measured, given a mistyped path, would otherwise make an empty database and find nothing
    wrong in it). An engine that only reads (not `write`) begins its transactions deferred: in
    WAL mode it reads beside a writer (a check measuring for half an hour) instead of waiting for it."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError, TypeError):
        raise DatabaseError(f"not a database URL: {masked(url)}") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SAWarning)  # e.g. a query argument the driver would ignore
            sqlite = parsed.get_backend_name() == "sqlite"
            engine = _sqlite_engine(url, parsed, create, write) if sqlite else create_engine(url)
    except (ArgumentError, ImportError, ValueError, TypeError, SAWarning) as exc:
        raise DatabaseError(f"cannot use database {masked(url)}: {scrub(_reason(exc), url)}"
                            f"{_missing_driver(exc)}") from None
    try:
        with engine.connect():
            pass
    except (SQLAlchemyError, ValueError, TypeError) as exc:
        raise DatabaseError(f"cannot reach database {masked(url)}: {scrub(_reason(exc), url)}"
                            f"{_too_long(parsed) if sqlite else ''}") from None
    return engine


# bytes: the longest database path SQLite's unix VFS opens, its 512 (MAX_PATHNAME) less the
# "-journal" it appends and a NUL (a path of 501 bytes opened here, one of 506 did not)
SQLITE_PATH_LIMIT = 512 - len("-journal") - 1


def _missing_driver(exc: BaseException) -> str:
    # PostgreSQL's driver is an extra: say which
    return " (PostgreSQL needs the extra: pip install 'proofbench[postgres]')" \
        if isinstance(exc, ImportError) and "psycopg" in str(exc) else ""


def _too_long(parsed) -> str:
    # SQLite says only "unable to open database file" of a path longer than it opens
    size = len(os.path.abspath(parsed.database or "").encode())
    return (f" (its path has {size} bytes, and SQLite opens none over {SQLITE_PATH_LIMIT}: name a database under a "
            f"shorter path, --db or PROOFBENCH_DB)" if size > SQLITE_PATH_LIMIT else "")


def _reason(exc: BaseException) -> str:
    # the driver's own first line where SQLAlchemy wraps one
    exc = getattr(exc, "orig", None) or exc
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    locked = (f" (another process held it past the {BUSY_TIMEOUT_MS // 1000} s proofbench waits: a check or a "
              f"bisection holds it while it measures; run again when that is done)")
    return line + (locked if line == "database is locked" else "")


# SQLite's result codes, and PostgreSQL's SQLSTATE classes, of a database's own state: a full
# disk, I/O, a lock, a corrupt or unopenable file; a lost connection, exhausted resources, an
# operator's shutdown, a system error. Not "no such column": that is a bug in proofbench.
_STATE_CODES = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CORRUPT", "SQLITE_NOTADB",
                "SQLITE_CANTOPEN", "SQLITE_READONLY")
_STATE_CLASSES = ("08", "53", "57", "58")


def failed_midway(exc: BaseException) -> DatabaseError | None:
    """The database's own failure in the middle of a command (a full disk, a lost connection, a
    lock held past the wait) as a DatabaseError, exit 2: the database's state, not a bug in
    proofbench; None for anything else. What a transaction had not committed is not stored."""
    driver = getattr(exc, "orig", None) or exc
    state = str(getattr(driver, "sqlite_errorname", None) or getattr(driver, "sqlstate", None) or "")
    lost = getattr(exc, "connection_invalidated", False)
    postgres = not state.startswith("SQLITE") and state[:2] in _STATE_CLASSES
    if not (lost or state.startswith(_STATE_CODES) or postgres):
        return None
    line = _reason(exc)
    full = " (free space where the database lies and run again: nothing half-written was stored)" \
        if "disk is full" in line else ""
    return DatabaseError(f"the database failed: {line}{full}")


def alembic_config(engine: Engine) -> Config:
    """Alembic configured for this package's migrations and the given engine."""
    config = Config()
    config.set_main_option("script_location", str(ROOT / "migrations"))
    config.attributes["connection"] = None
    config.attributes["engine"] = engine
    return config


def _head(engine: Engine) -> tuple[str, set[str]]:
    script = ScriptDirectory.from_config(alembic_config(engine))
    return script.get_current_head(), {rev.revision for rev in script.walk_revisions()}


def schema_revision(engine: Engine) -> str | None:
    """The schema's migration revision (None: no tables yet); DatabaseError for a database that
    holds tables of something else, or a revision this proofbench does not know (a newer one)."""
    try:
        with engine.connect() as connection:
            tables = set(inspect(connection).get_table_names())
            current = MigrationContext.configure(connection).get_current_revision() if tables else None
    except SQLAlchemyError as exc:
        raise DatabaseError(f"cannot read database {location(engine)}: {_reason(exc)}") from None
    # A SQLite file is one application's; a PostgreSQL database may be shared with others, unless
    # tables of proofbench's names are there without its migrations.
    foreign = tables if engine.dialect.name == "sqlite" else tables & _own_tables()
    if foreign and current is None:
        shown = ", ".join(sorted(foreign)[:5]) + (", ..." if len(foreign) > 5 else "")
        raise DatabaseError(f"{location(engine)} is not a proofbench database (it holds other tables: {shown}); "
                            f"name an empty database or one proofbench made")
    head, known = _head(engine)
    if current is not None and current not in known:
        raise DatabaseError(f"{location(engine)} has schema revision {current[:40]!r}, which this proofbench does not "
                            f"know (its newest is {head!r}): a newer proofbench wrote it; upgrade proofbench")
    return current


def _own_tables() -> set[str]:
    # every table of the schema (models, alerts, profiles), as the migrations' environment sees it
    import proofbench.db.alerts
    import proofbench.db.profiles  # noqa: F401
    from proofbench.db.models import Base

    return set(Base.metadata.tables)


def location(engine: Engine) -> str:
    """The database as its user named it (a read-only SQLite file too, which is opened by
    another URL), password masked."""
    named = masked(_AS_TYPED.get(engine) or engine.url.render_as_string(hide_password=False))
    # SQLAlchemy escapes the colon of a SQLite URI's `file:`; the user typed it plain
    return named.replace(":///file%3A", ":///file:", 1) if engine.url.get_backend_name() == "sqlite" else named


def nothing_measured(where: str, doing: str) -> str:
    """What a command that reads what was measured says of a database that holds no results
    (`where`: the database as its user named it; `doing`: what there is nothing to do)."""
    return (f"{where}: the database holds no results: nothing to {doing} (measure first: `proofbench run` or "
            f"`history`; or --db names another database)")


def _wal(dbapi_connection: sqlite3.Connection) -> None:
    # Switching a file to WAL needs it to itself for a moment, and SQLite answers "database is
    # locked" at once, busy timeout or not, while another process (a fleet member starting on the
    # same fresh file) is reading or migrating it: try again until the busy timeout is spent.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def upgrade(engine: Engine, write: bool = True, asked: bool = True) -> None:
    """Bring the schema to the newest migration (creating it on an empty database). Where it was
    not asked for (`asked` False: a command's own `connect`, not `proofbench db upgrade`), an older
    schema is a DatabaseError for a command that only reads (`write` False: it would change what
    it was asked to read) and on a shared database (PostgreSQL: once upgraded, the fleet's machines
    that still run an older proofbench cannot use it)."""
    current, head = schema_revision(engine), _head(engine)[0]
    if current == head:
        return
    if current is not None and not asked:
        _refuse_unasked(engine, write, current, head)
    if read_only(engine):
        raise DatabaseError(f"{location(engine)} is read-only here and its schema ({current or 'none'}) is older than "
                            f"this proofbench's ({head}): run `proofbench db upgrade` where it can be written")
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # WAL lets readers and one writer share the file; SQLite alters a column by copying its
            # table and dropping the old one, which enforced foreign keys forbid. Both pragmas only
            # take effect outside a transaction.
            _wal(connection.connection.driver_connection)
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


def _refuse_unasked(engine: Engine, write: bool, current: str, head: str) -> None:
    # an older schema that a command may not upgrade on its own (see `upgrade`), said in one line
    older = f"{location(engine)}: its schema ({current}) is older than this proofbench's ({head})"
    if not write:
        raise DatabaseError(f"{older}; a command that only reads leaves it so: run `proofbench db upgrade` "
                            f"(older proofbench versions cannot use it after)")
    if engine.dialect.name != "sqlite":
        raise DatabaseError(f"{older}; a shared database is upgraded only by `proofbench db upgrade`, once every "
                            f"machine that uses it runs this version (older ones cannot use it after)")


def connect(url: str, migrate: bool = True, write: bool = True, create: bool = True) -> Engine:
    """An engine on a database whose schema is current. A command that only reads passes
    `write=False`, and then works on a SQLite file it may not write; one that works on what was
    measured passes `create=False`, and a SQLite file that does not exist is an error. An empty
    database gets the schema; an older schema is upgraded here only on a SQLite file a command
    writes to (`upgrade`)."""
    engine = engine_for(url, create, write)
    if write and read_only(engine):
        raise DatabaseError(f"{masked(url)}: cannot write the database (no write permission on the file or its "
                            f"directory)")
    if migrate:
        upgrade(engine, write, asked=False)
    else:
        schema_revision(engine)
    return engine


def scratch_copy(engine: Engine) -> Engine:
    """An in-memory copy of a SQLite database, for a command that writes only what it throws
    away (`check --no-record`, which so reads beside a writer), named as the file was; it holds
    the whole database in memory."""
    memory = sqlite3.connect(":memory:", check_same_thread=False)
    with engine.connect() as connection:
        connection.connection.driver_connection.backup(memory)
    copy = create_engine("sqlite://", creator=lambda: memory, poolclass=StaticPool)
    _AS_TYPED[copy] = _AS_TYPED.get(engine) or engine.url.render_as_string(hide_password=False)
    event.listen(copy, "connect", _sqlite_pragmas)
    event.listen(copy, "begin", _sqlite_begin)
    return copy


def has_schema(engine: Engine) -> bool:
    """True when the database already holds proofbench's tables."""
    return inspect(engine).has_table("results")
