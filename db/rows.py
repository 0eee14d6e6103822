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
