"""Commit order, written once: where a commit stands on its branch, and which commit is the latest.

A commit's place is its position on a branch's first-parent history (`place`, from git); a
commit that has none (results ingested without the repository) is ordered by its date: the
author date, which is the one asv records in the results files (git's `%at`), from the
repository where it is at hand, else from the results (the repository's commit date only where
no author date is known: an amended or rebased commit's commit date is later than its author
date, and the two clocks mixed put a copy of a commit's results before the commit); then by
the date its results were taken, then by the order it was ingested. Hashes never order. `basis` says which of these
ordered a list of commits, so a report can say so.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Sequence

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from proofbench.db.models import Commit, Result

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def aware(when: dt.datetime | None) -> dt.datetime | None:
    """A timestamp with its zone: SQLite hands back naive ones, which were written as UTC."""
    return when.replace(tzinfo=dt.timezone.utc) if when is not None and when.tzinfo is None else when


def place(session: Session, hashes: Sequence[str], branch: str) -> int:
    """Give the known commits among `hashes` (a branch's first-parent history, oldest
    first) their position on `branch`; returns how many rows changed.

    A commit already placed on another branch keeps that place: a commit belongs to the
    first branch it was measured on, so that branch's series keep it.
    """
    positions = {h: i for i, h in enumerate(hashes)}
    changed = 0
    rows = session.execute(select(Commit.id, Commit.hash, Commit.branch, Commit.position)).all()
    for commit_id, full, placed_on, position in rows:
        if full not in positions or placed_on not in (None, branch) or position == positions[full]:
            continue
        session.execute(update(Commit).where(Commit.id == commit_id)
                        .values(branch=branch, position=positions[full]))
        changed += 1
    return changed


BASES = ("first-parent history", "commit dates", "results' dates", "measurement or ingest order")


def _dated(commit: Commit) -> tuple[int, dt.datetime | None]:
    # the date that orders a commit without a position, and which of BASES it is (3: none)
    for basis_index, when in ((1, commit.authored_at), (2, commit.results_date), (1, commit.committed_at)):
        if when is not None:
            return basis_index, aware(when)
    return 3, None


def order_key(commit: Commit, measured_at: dt.datetime | None = None) -> tuple:
    """Sort key of commit order: position, else the author date (the repository's, else asv's;
    see the module docstring), else when it was measured, else ingest order."""
    when = _dated(commit)[1] or aware(measured_at)
    return (commit.position is None, commit.position or 0, when is None, when or _EPOCH, commit.id)


def basis(commits: Sequence[Commit]) -> tuple[str, ...]:
    """What ordered `commits` (each of `BASES` that did, in that order): the first-parent
    history where they have a position, else the repository's dates, the dates asv recorded in
    the results files, or when they were measured and ingested (as `order_key` takes them)."""
    used = set()
    for c in commits:
        used.add(0 if c.position is not None else _dated(c)[0])
    return tuple(BASES[i] for i in sorted(used))


def ordered(session: Session, machine_id: int | None = None, profiles: Collection[str] | None = None) -> list[Commit]:
    """The commits that have results (on `machine_id`, of the run `profiles`, when given), oldest first."""
    query = select(Result.commit_id, func.min(Result.started_at)).group_by(Result.commit_id)
    if machine_id is not None:
        query = query.where(Result.machine_id == machine_id)
    if profiles is not None:
        query = query.where(Result.profile.in_(list(profiles)))
    measured = dict(session.execute(query).all())
    commits = session.scalars(select(Commit).where(Commit.id.in_(list(measured))))
    return sorted(commits, key=lambda c: order_key(c, measured[c.id]))


def latest(session: Session, machine_id: int, profiles: Collection[str] | None = None) -> Commit | None:
    """The newest commit, in commit order, with results on `machine_id` (of the run `profiles`, when given)."""
    commits = ordered(session, machine_id, profiles)
    return commits[-1] if commits else None
