"""The nightly check's memory: the checks that ran and the alerts they raised.

An alert is a change point in one series (machine, environment, benchmark, parameters):
the commit where the new level starts, its direction, the levels on either side and the
test's p-value, as the check that first found it saw them. An alert never vanishes, and moves
(`move`) only onto the two commits a re-measurement that confirmed it compared, or where
bisection finds its first bad commit elsewhere: later checks that find the same step again only
mark it seen; it is closed
(`resolved`) when a later step in the opposite direction brings the level back. A step the
history cannot decide yet is kept as `suspected` until a re-measurement confirms it (it becomes
`open`) or drops it (`dropped`, remembered so that it is not measured again every night). People
answer an alert (`AlertAction`): acknowledged, it no longer fails the gate; accepted, its new
level is the reference.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint, select, text
from sqlalchemy.orm import Mapped, Session, mapped_column, relationship

from proofbench.db.models import Base, Benchmark, Commit, Environment, Machine, Result, now
from proofbench.errors import InputError

CHECK_LOCK = 0x636865636B  # PostgreSQL advisory lock key ("check") held by a check's transaction


def one_check_at_a_time(session: Session) -> None:
    """Make `session`'s transaction the only check's on the database until it ends: on
    PostgreSQL an advisory lock (two machines of a fleet checking at once would otherwise raise
    the same alert twice, and one would fail on the alerts' unique key); SQLite's writer lock,
    which the transaction takes as it begins, does this there."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": CHECK_LOCK})


class CheckRun(Base):
    """One recorded `proofbench check`: when, over which branch, and what it found.

    `open_regressions` counts the regressions open after this check, new ones included.
    """

    __tablename__ = "check_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)
    branch: Mapped[str] = mapped_column(String(200))
    since: Mapped[str] = mapped_column(Text, default="")
    series: Mapped[int] = mapped_column(Integer, default=0)
    new_regressions: Mapped[int] = mapped_column(Integer, default=0)
    new_improvements: Mapped[int] = mapped_column(Integer, default=0)
    open_regressions: Mapped[int] = mapped_column(Integer, default=0)
    resolved: Mapped[int] = mapped_column(Integer, default=0)
    exit_code: Mapped[int] = mapped_column(Integer, default=0)


class Alert(Base):
    """A step in one series, as first reported; see the module docstring for its life."""

    __tablename__ = "alerts"
    __table_args__ = (UniqueConstraint("machine_id", "environment_id", "benchmark_id", "params_key",
                                       "commit_id", "direction"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"), index=True)
    params_key: Mapped[str] = mapped_column(String(2000))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"))
    previous_commit_id: Mapped[int | None] = mapped_column(ForeignKey("commits.id"))
    direction: Mapped[int] = mapped_column(Integer)
    regression: Mapped[bool] = mapped_column(Boolean)
    before: Mapped[float] = mapped_column(Float)
    after: Mapped[float] = mapped_column(Float)
    p_value: Mapped[float] = mapped_column(Float)
    score: Mapped[float] = mapped_column(Float)
    # the step as the detector estimated it, signed (+0.045: 4.5% up): what min_step is held
    # against; the levels' ratio can read less beside a slope. None: raised before it was kept
    step: Mapped[float | None] = mapped_column(Float, nullable=True)
    status: Mapped[str] = mapped_column(String(10), default="open")
    raised_by_id: Mapped[int] = mapped_column(ForeignKey("check_runs.id"))
    seen_by_id: Mapped[int] = mapped_column(ForeignKey("check_runs.id"))
    resolved_by_id: Mapped[int | None] = mapped_column(ForeignKey("check_runs.id"))
    resolved_at_id: Mapped[int | None] = mapped_column(ForeignKey("commits.id"))
    # a re-measurement's decision (proofbench.analysis.confirm), with its rounds, when one was made
    confirmation: Mapped[dict[str, Any] | None] = mapped_column()
    # the first commit at the new level, found by measuring the commits between (bisection)
    culprit_id: Mapped[int | None] = mapped_column(ForeignKey("commits.id"))
    bisection: Mapped[dict[str, Any] | None] = mapped_column()

    benchmark: Mapped[Benchmark] = relationship()
    machine: Mapped[Machine] = relationship()
    environment: Mapped[Environment] = relationship()
    commit: Mapped[Commit] = relationship(foreign_keys=[commit_id])
    previous_commit: Mapped[Commit | None] = relationship(foreign_keys=[previous_commit_id])
    resolved_at: Mapped[Commit | None] = relationship(foreign_keys=[resolved_at_id])
    culprit: Mapped[Commit | None] = relationship(foreign_keys=[culprit_id])
    raised_by: Mapped[CheckRun] = relationship(foreign_keys=[raised_by_id])
    actions: Mapped[list[AlertAction]] = relationship(back_populates="alert", order_by="AlertAction.id")


class AlertAction(Base):
    """A person's answer to an alert: `ack` (seen, expected: it no longer fails the gate) or
    `accept` (the new level is the reference from now on); who, when and why. An action is
    withdrawn, never deleted: `withdrawn_at` says when it stopped counting."""

    __tablename__ = "alert_actions"

    id: Mapped[int] = mapped_column(primary_key=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id"), index=True)
    action: Mapped[str] = mapped_column(String(10))
    by: Mapped[str] = mapped_column(Text)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)
    note: Mapped[str] = mapped_column(Text, default="")
    withdrawn_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    withdrawn_by: Mapped[str | None] = mapped_column(Text)

    alert: Mapped[Alert] = relationship(back_populates="actions")


ACTIONS = ("ack", "accept")


def standing(alert: Alert) -> AlertAction | None:
    """The answer that counts for `alert` now: its newest action not withdrawn, or None."""
    return next((a for a in reversed(alert.actions) if a.withdrawn_at is None), None)


def answer(session: Session, alert_id: int, action: str, by: str, note: str = "") -> AlertAction:
    """Record `action` ('ack' or 'accept') on an alert; InputError naming what exists otherwise."""
    if action not in ACTIONS:
        raise InputError(f"alert action {action!r}: expected one of {', '.join(ACTIONS)}")
    alert = find(session, alert_id)
    if alert.status == "dropped":  # measured again or read again, it showed no step
        verb = "acknowledge" if action == "ack" else action
        raise InputError(f"alert {alert_id} was dropped: no step stands to {verb} (it is suspected anew where "
                         f"newer commits show it again)")
    row = AlertAction(alert=alert, action=action, by=by, note=note, at=now())
    session.add(row)
    session.flush()
    return row


def withdraw(session: Session, alert_id: int, by: str) -> AlertAction:
    """Withdraw the standing answer of an alert (it counts again as it did before the answer)."""
    alert = find(session, alert_id)
    current = standing(alert)
    if current is None:
        raise InputError(f"alert {alert_id} has no standing answer to withdraw")
    current.withdrawn_at, current.withdrawn_by = now(), by
    return current


def find(session: Session, alert_id: int) -> Alert:
    """The alert of that id; InputError naming the newest ones where there is none."""
    alert = session.get(Alert, alert_id)
    if alert is None:
        known = session.scalars(select(Alert.id).order_by(Alert.id.desc()).limit(5)).all()
        raise InputError(f"no alert {alert_id}; the newest are {', '.join(map(str, known)) or 'none'}")
    return alert


def other_at(session: Session, alert: Alert, direction: int, commit_id: int | None) -> Alert | None:
    """Another alert of `alert`'s series, in `direction`, at the commit `commit_id`, if one stands there."""
    return session.scalars(select(Alert).where(
        Alert.machine_id == alert.machine_id, Alert.environment_id == alert.environment_id,
        Alert.benchmark_id == alert.benchmark_id, Alert.params_key == alert.params_key,
        Alert.direction == direction, Alert.commit_id == commit_id, Alert.id != alert.id)).first()


def reach_back(session: Session, alert: Alert, previous_id: int) -> None:
    """Make the commit `previous_id` `alert`'s previous one (the step lies after it), where it is not."""
    if previous_id != alert.previous_commit_id:
        alert.previous_commit_id = previous_id
        session.flush()
        session.expire(alert, ["previous_commit"])


def move(session: Session, alert: Alert, commits: list[str], culprit: str, since: str) -> str | None:
    """Put `alert` at the first measured commit at or after `culprit` (of `commits`, in history
    order), its previous commit the last measured one before `since` (the first commit that may
    have made the step: the culprit, or the first of a range bisection could not narrow), where
    the history had placed it elsewhere; returns the commit it was at (None: it stays, and only
    its previous commit may move back to the last measured one before `since`)."""
    rows = session.execute(select(Commit.hash, Commit.id).join(Result, Result.commit_id == Commit.id).where(
        Result.machine_id == alert.machine_id, Result.environment_id == alert.environment_id,
        Result.benchmark_id == alert.benchmark_id, Result.params_key == alert.params_key,
        Result.value.is_not(None), Commit.hash.in_(commits))).all()
    measured = {h: i for h, i in rows}
    at = commits.index(culprit)
    after = next((measured[c] for c in commits[at:] if c in measured), None)
    before = next((measured[c] for c in reversed(commits[:commits.index(since)]) if c in measured), None)
    if after is None:
        return None
    if after == alert.commit_id:  # it stays; what it says lies before the step may widen
        if before is not None:
            reach_back(session, alert, before)
        return None
    if other_at(session, alert, alert.direction, after) is not None:  # another one stands there: it stays
        return None
    moved = alert.commit.hash
    alert.commit_id, alert.previous_commit_id = after, before
    session.flush()
    session.expire(alert, ["commit", "previous_commit"])
    return moved
