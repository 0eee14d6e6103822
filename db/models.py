"""The schema: machines, commits, environments, benchmarks, results (with raw samples), claims.

A series is (machine, environment, benchmark, parameters); each result row is one point of
one series at one commit and keeps its raw samples, from which statistics are derived.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Optional

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    """Declarative base of every proofbench table."""

    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


def now() -> dt.datetime:
    """The current time in UTC: when a row is made."""
    return dt.datetime.now(dt.timezone.utc)


class Machine(Base):
    """A machine as asv names it, at one hardware fingerprint.

    When a machine's profile changes (new GPU, new driver), a new row with the same name
    and a new fingerprint is made, linked to the one it replaces, so results from
    different hardware are never silently mixed in one series.
    """

    __tablename__ = "machines"
    __table_args__ = (UniqueConstraint("name", "fingerprint"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    fingerprint: Mapped[str] = mapped_column(String(64))
    profile: Mapped[dict[str, Any]] = mapped_column(default=dict)
    previous_id: Mapped[Optional[int]] = mapped_column(ForeignKey("machines.id"))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)


class Commit(Base):
    """A commit of the measured repository; `position` orders a branch's first-parent history.

    `results_date` is the commit's date as asv recorded it in the results files: what orders
    commits when the repository is not at hand (see `proofbench.db.commits`).
    """

    __tablename__ = "commits"

    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    subject: Mapped[str] = mapped_column(Text, default="")
    author: Mapped[str] = mapped_column(String(200), default="")
    authored_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime(timezone=True))
    committed_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime(timezone=True))
    branch: Mapped[Optional[str]] = mapped_column(String(200))
    position: Mapped[Optional[int]] = mapped_column(Integer)
    results_date: Mapped[Optional[dt.datetime]] = mapped_column(DateTime(timezone=True))


class Environment(Base):
    """An asv environment: the Python and the requirements the benchmarks ran with."""

    __tablename__ = "environments"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(1000), unique=True)
    python: Mapped[str] = mapped_column(Text, default="")
    requirements: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Benchmark(Base):
    """One asv benchmark at one asv `version`: a subject's metric, or a plain asv benchmark.

    `kind` is "subject" for a benchmark the suite's labels describe (subject, area, item,
    metric, variants), "plain" for any other asv benchmark: its metric is asv's type (time,
    memory, peakmemory, track), its unit asv's, and its parameters are named as asv names
    them. A new `version` (the workload or the benchmark's code changed) is a new row, hence
    a new series, as in `asv publish`.
    """

    __tablename__ = "benchmarks"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(1000))
    version: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(10), default="subject", server_default="subject")
    subject: Mapped[str] = mapped_column(String(200))
    area: Mapped[str] = mapped_column(String(50))
    metric: Mapped[str] = mapped_column(String(100))
    unit: Mapped[str] = mapped_column(String(100))
    higher_is_better: Mapped[bool] = mapped_column(Boolean)
    item: Mapped[str] = mapped_column(String(50), default="")
    param_names: Mapped[list[Any]] = mapped_column(default=list)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class IngestedFile(Base):
    """A results file taken in, by content hash: ingesting the same bytes twice adds nothing."""

    __tablename__ = "ingested_files"

    id: Mapped[int] = mapped_column(primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    path: Mapped[str] = mapped_column(Text)
    results: Mapped[int] = mapped_column(Integer, default=0)
    ingested_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)


class Result(Base):
    """One point of a series: the raw samples of one benchmark at one parameter set.

    `status` is ok, failed (asv's None; `reason` says why) or skipped (asv's NaN).
    `value` is asv's own summary (median for timings) kept for convenience; statistics
    shown in reports are derived from `samples` (and a speedup from `rounds`).
    """

    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("benchmark_id", "machine_id", "commit_id", "environment_id", "params_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"), index=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"), index=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    file_id: Mapped[Optional[int]] = mapped_column(ForeignKey("ingested_files.id"))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    params_key: Mapped[str] = mapped_column(String(2000))
    status: Mapped[str] = mapped_column(String(10))
    reason: Mapped[str] = mapped_column(Text, default="")
    value: Mapped[Optional[float]] = mapped_column(Float)
    samples: Mapped[Optional[list[Any]]] = mapped_column()
    number: Mapped[Optional[int]] = mapped_column(Integer)
    started_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime(timezone=True))
    duration: Mapped[Optional[float]] = mapped_column(Float)
    other_load_cores: Mapped[Optional[float]] = mapped_column(Float)
    busy: Mapped[Optional[bool]] = mapped_column(Boolean)
    threads: Mapped[Optional[int]] = mapped_column(Integer)
    profile: Mapped[Optional[str]] = mapped_column(String(50))
    equivalent: Mapped[Optional[bool]] = mapped_column(Boolean)
    # A paired measurement's raw record (track_speedup): its rounds, plan and answer checks,
    # as `proofbench.measure.pairing` documents it; None for every other benchmark.
    rounds: Mapped[Optional[dict[str, Any]]] = mapped_column()
    # What the GPUs did while a CUDA profile's benchmark ran (`proofbench.measure.gpu_watch.summary`):
    # throttling, clocks, temperature, power, other processes; None off CUDA or without NVML.
    gpu: Mapped[Optional[dict[str, Any]]] = mapped_column()

    benchmark: Mapped[Benchmark] = relationship()
    machine: Mapped[Machine] = relationship()
    commit: Mapped[Commit] = relationship()
    environment: Mapped[Environment] = relationship()


class ClaimRow(Base):
    """A claim from the seed documents, copied from subjects/claims.toml at ingest."""

    __tablename__ = "claims"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    subject: Mapped[str] = mapped_column(String(200))
    variant: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(200))
    quote: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(30))
    metric: Mapped[str] = mapped_column(String(100))
    low: Mapped[Optional[float]] = mapped_column(Float)
    high: Mapped[Optional[float]] = mapped_column(Float)
    device: Mapped[str] = mapped_column(String(10), default="any")
    note: Mapped[str] = mapped_column(Text, default="")
