"""Series: the history of one measurement, read from the database in first-parent order.

A series is (machine, environment, benchmark, parameters); its metric (unit, direction)
comes with the benchmark. Its points are the results of the commits on one branch's
first-parent history, ordered by `Commit.position` (0 = the branch's root commit), never by
date: a merged branch's commits are not on that history, so they never interleave with the
branch's own. A commit gets its position from `proofbench.db.commits.place`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result


@dataclass(frozen=True)
class CommitRef:
    """A commit as a series point names it."""

    id: int
    hash: str
    subject: str
    position: int
    authored_at: str | None
    committed_at: str | None

    @property
    def short(self) -> str:
        return self.hash[:8]


@dataclass(frozen=True)
class SeriesPoint:
    """One commit's result in a series. `value` is None unless the result is ok and finite
    (failed and skipped runs stay in the series as gaps); `samples` are the raw samples."""

    commit: CommitRef
    status: str
    value: float | None
    samples: tuple[float, ...] | None


@dataclass(frozen=True)
class SeriesKey:
    """What identifies a series in the database."""

    machine_id: int
    environment_id: int
    benchmark_id: int
    params_key: str


@dataclass(frozen=True)
class Series:
    """The points of one (machine, environment, benchmark, parameters), oldest first."""

    key: SeriesKey
    machine: str
    environment: str
    benchmark: str
    subject: str
    metric: str
    unit: str
    higher_is_better: bool
    params: dict
    points: tuple[SeriesPoint, ...]

    @property
    def values(self) -> list[float | None]:
        return [p.value for p in self.points]

    @property
    def samples(self) -> list[tuple[float, ...] | None]:
        return [p.samples if p.value is not None else None for p in self.points]

    def index_of(self, commit_id: int) -> int | None:
        """Where a commit stands in this series, or None when it has no point here."""
        return next((i for i, p in enumerate(self.points) if p.commit.id == commit_id), None)


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def _point(result: Result, commit: Commit) -> SeriesPoint:
    value = result.value if result.status == "ok" else None
    if value is not None and not math.isfinite(value):
        value = None
    samples = tuple(float(s) for s in result.samples) if result.samples else None
    ref = CommitRef(commit.id, commit.hash, commit.subject or "", commit.position,
                    _iso(commit.authored_at), _iso(commit.committed_at))
    return SeriesPoint(ref, result.status, value, samples)


def load(session: Session, branch: str) -> list[Series]:
    """Every series with at least one point on `branch`'s first-parent history."""
    query = (select(Result, Commit, Benchmark, Machine.name, Environment.name)
             .join(Commit, Result.commit_id == Commit.id)
             .join(Benchmark, Result.benchmark_id == Benchmark.id)
             .join(Machine, Result.machine_id == Machine.id)
             .join(Environment, Result.environment_id == Environment.id)
             .where(Commit.branch == branch, Commit.position.is_not(None))
             .order_by(Result.machine_id, Result.environment_id, Result.benchmark_id, Result.params_key,
                       Commit.position))
    return list(_group(session.execute(query)))


def _group(rows) -> Iterator[Series]:
    current: SeriesKey | None = None
    head: tuple = ()
    points: list[SeriesPoint] = []
    for result, commit, bench, machine, environment in rows:
        key = SeriesKey(result.machine_id, result.environment_id, result.benchmark_id, result.params_key)
        if key != current:
            if current is not None:
                yield Series(current, *head, tuple(points))
            current, points = key, []
            head = (machine, environment, bench.name, bench.subject, bench.metric, bench.unit,
                    bool(bench.higher_is_better), dict(result.params or {}))
        points.append(_point(result, commit))
    if current is not None:
        yield Series(current, *head, tuple(points))
