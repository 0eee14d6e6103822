"""The nightly check's memory: the checks that ran and the alerts they raised.

An alert is a change point in one series (machine, environment, benchmark, parameters):
the commit where the new level starts, its direction, the levels on either side and the
test's p-value, as the check that first found it saw them. An alert never moves and never
vanishes: later checks that find the same step again only mark it seen; it is closed
(`resolved`) when a later step in the opposite direction brings the level back.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Optional

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from proofbench.db.models import Base, Benchmark, Commit, Environment, Machine, now


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
    previous_commit_id: Mapped[Optional[int]] = mapped_column(ForeignKey("commits.id"))
    direction: Mapped[int] = mapped_column(Integer)
    regression: Mapped[bool] = mapped_column(Boolean)
    before: Mapped[float] = mapped_column(Float)
    after: Mapped[float] = mapped_column(Float)
    p_value: Mapped[float] = mapped_column(Float)
    score: Mapped[float] = mapped_column(Float)
    status: Mapped[str] = mapped_column(String(10), default="open")
    raised_by_id: Mapped[int] = mapped_column(ForeignKey("check_runs.id"))
    seen_by_id: Mapped[int] = mapped_column(ForeignKey("check_runs.id"))
    resolved_by_id: Mapped[Optional[int]] = mapped_column(ForeignKey("check_runs.id"))
    resolved_at_id: Mapped[Optional[int]] = mapped_column(ForeignKey("commits.id"))

    benchmark: Mapped[Benchmark] = relationship()
    machine: Mapped[Machine] = relationship()
    environment: Mapped[Environment] = relationship()
    commit: Mapped[Commit] = relationship(foreign_keys=[commit_id])
    previous_commit: Mapped[Optional[Commit]] = relationship(foreign_keys=[previous_commit_id])
    resolved_at: Mapped[Optional[Commit]] = relationship(foreign_keys=[resolved_at_id])
    raised_by: Mapped[CheckRun] = relationship(foreign_keys=[raised_by_id])
