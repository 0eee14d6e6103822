"""Writing rows that several processes may write at once (a fleet ingesting together).

Rows are made with the database's own INSERT .. ON CONFLICT, so concurrent writers neither
create duplicates nor fail on each other's rows; on other databases a plain insert is used,
with no concurrency promised.
"""
from __future__ import annotations

from typing import Any, Callable

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def conflict_insert(session: Session) -> Callable[..., Any] | None:
    """The dialect's INSERT that supports ON CONFLICT, or None on other databases."""
    return _INSERTS.get(session.get_bind().dialect.name)


def insert_or_get(session: Session, model: type, unique: dict, values: dict) -> int:
    """Insert a row unless one with the same unique key exists; return its id."""
    insert = conflict_insert(session)
    where = [getattr(model, k) == v for k, v in unique.items()]
    if insert is not None:
        session.execute(insert(model).values(**unique, **values).on_conflict_do_nothing())
    elif session.scalar(select(model.id).where(*where)) is None:
        session.add(model(**unique, **values))
        session.flush()
    return session.scalar(select(model.id).where(*where))


def upsert(session: Session, model: type, rows: list[dict], unique: tuple[str, ...]) -> None:
    """Write `rows` in one statement per batch: a row whose `unique` columns match an existing
    one replaces its other columns (INSERT .. ON CONFLICT DO UPDATE), so concurrent writers of
    the same rows neither fail nor duplicate; elsewhere, row by row. Rows are written in the
    order of their unique key, so two writers always lock rows in the same order."""
    rows = sorted(rows, key=lambda r: tuple(r[k] for k in unique))
    insert = conflict_insert(session)
    if insert is None:
        for values in rows:
            where = [getattr(model, k) == values[k] for k in unique]
            row = session.scalar(select(model).where(*where))
            if row is None:
                session.add(model(**values))
            else:
                for key, value in values.items():
                    setattr(row, key, value)
        session.flush()
        return
    if not rows:
        return
    statement = insert(model)
    excluded = statement.excluded  # a new collection at every access
    changed = {k: excluded[k] for k in rows[0] if k not in unique}
    # on the session's connection, as Core: the ORM's bulk path adds nothing for plain dicts but time
    session.connection().execute(statement.on_conflict_do_update(index_elements=list(unique), set_=changed), rows)
