"""Machines of a fleet in the database: one row per machine name and hardware fingerprint.

`store_machine` files a profile under its (name, fingerprint): the same machine seen again
is the same row; a machine whose fingerprint changed (new GPU, new driver, new torch) gets a
new row whose `previous_id` points at the row it replaces, so old and new results are never
mixed in one series. It is safe when several processes store machines at once: the row is
made with the database's own INSERT .. ON CONFLICT DO NOTHING.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.db.models import Machine
from proofbench.db.rows import insert_or_get
from proofbench.errors import DatabaseError
from proofbench.machine.capture import MachineProfile, fingerprint


def latest_machine(session: Session, name: str) -> Machine | None:
    """The newest row (last fingerprint seen) of the machine called `name`, or None."""
    return session.scalar(select(Machine).where(Machine.name == name).order_by(Machine.id.desc()).limit(1))


def machine_history(session: Session, name: str) -> list[Machine]:
    """Every fingerprint the machine called `name` has had, oldest first."""
    return list(session.scalars(select(Machine).where(Machine.name == name).order_by(Machine.id)))


def store_machine(session: Session, name: str, fingerprint: str, profile: dict[str, Any]) -> Machine:
    """The row of (`name`, `fingerprint`), made if new and linked to the name's previous row.

    An existing row keeps its first profile: the fingerprint says the hardware is the same,
    and readings that move (current clock, hostname) are not worth a write per run.
    """
    existing = _find(session, name, fingerprint)
    if existing is not None:
        return existing
    previous = latest_machine(session, name)
    insert_or_get(session, Machine, {"name": name, "fingerprint": fingerprint},
                  {"profile": profile, "previous_id": previous.id if previous is not None else None})
    stored = _find(session, name, fingerprint)
    if stored is None:
        raise DatabaseError(f"machine {name!r} (fingerprint {fingerprint}) was not stored and cannot be read back")
    return stored


def _find(session: Session, name: str, fingerprint: str) -> Machine | None:
    return session.scalar(select(Machine).where(Machine.name == name, Machine.fingerprint == fingerprint))


def store_captured(session: Session, profile: MachineProfile) -> tuple[Machine, bool]:
    """The row of a machine profile captured here (filed under its fingerprint), and whether it is new."""
    document = {"fingerprint": fingerprint(profile), **profile.to_dict()}
    known = {m.id for m in machine_history(session, profile.name)}
    row = store_machine(session, profile.name, document["fingerprint"], document)
    return row, row.id not in known
