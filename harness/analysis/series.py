"""Series: the history of one measurement, read from the database in commit order.

A series is (machine, environment, benchmark, parameters); its metric (unit, direction)
comes with the benchmark, and a benchmark whose asv `version` changed is a new series. Its
points are the results of the commits on one branch's first-parent history, ordered by
`Commit.position` (0 = the branch's root commit), never by date: a merged branch's commits
are not on that history, so they never interleave with the branch's own. A commit gets its
position from `proofbench.db.commits.place`. Where no commit with results has a place on the
branch (results ingested without their repository), every commit is ordered as
`proofbench.db.commits.ordered` orders it: by the dates asv recorded.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from proofbench.db.commits import basis, ordered
from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result
from proofbench.run_level import run_level


@dataclass(frozen=True)
class CommitRef:
    """A commit as a series point names it."""

    id: int
    hash: str
    subject: str
    position: int | None  # on the branch's first-parent history; None when ordered by date
    authored_at: str | None
    committed_at: str | None
    rank: int  # where it stands in the order: its position, else its index among the commits by date
    author: str = ""

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
    def levels(self) -> list[float | None]:
        """What change points are looked for in: for a timing, each run's level
        (`proofbench.run_level.run_level`: the low tail of its raw samples, which load disturbs
        least); for any other metric, the values."""
        if self.metric != "time":
            return self.values
        return [run_level(p.value, p.samples) for p in self.points]

    @property
    def samples(self) -> list[tuple[float, ...] | None]:
        return [p.samples if p.value is not None else None for p in self.points]

    def index_of(self, commit_id: int) -> int | None:
        """Where a commit stands in this series, or None when it has no point here."""
        return next((i for i, p in enumerate(self.points) if p.commit.id == commit_id), None)


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def ref(commit: Commit, rank: int) -> CommitRef:
    """How a series point names `commit`, standing at `rank` in the order."""
    return CommitRef(commit.id, commit.hash, commit.subject or "", commit.position, _iso(commit.authored_at),
                     _iso(commit.committed_at), rank, commit.author or "")


def _point(status: str, value: float | None, samples: list | None, commit: CommitRef) -> SeriesPoint:
    value = value if status == "ok" else None
    if value is not None and not math.isfinite(value):
        value = None
    return SeriesPoint(commit, status, value, tuple(float(s) for s in samples) if samples else None)


@dataclass(frozen=True)
class Order:
    """The commits series run over, oldest first, each at its rank, and what ordered them
    (`proofbench.db.commits.BASES`)."""

    commits: dict[int, CommitRef]  # by commit id
    basis: tuple[str, ...]


def order(session: Session, branch: str) -> Order:
    """`branch`'s first-parent order where any commit with results is placed on it, else every
    commit with results in date order."""
    placed = list(session.scalars(select(Commit).where(Commit.branch == branch, Commit.position.is_not(None),
                                                       Commit.id.in_(select(Result.commit_id).distinct()))
                                  .order_by(Commit.position)))
    if placed:
        return Order({c.id: ref(c, c.position) for c in placed}, basis(placed))
    commits = ordered(session)
    return Order({c.id: ref(c, i) for i, c in enumerate(commits)}, basis(commits))


def outside(session: Session, within: Order) -> int:
    """How many series have results, none of them at a commit of `within`: on a branch's
    first-parent order, the series of commits not on that history (another project's results
    in the same database, or a branch that was never merged)."""
    key = (Result.machine_id, Result.environment_id, Result.benchmark_id, Result.params_key)
    every = select(*key).distinct().subquery()
    inside = select(*key).where(Result.commit_id.in_(list(within.commits))).distinct().subquery()
    return session.scalar(select(func.count()).select_from(every)) - \
        session.scalar(select(func.count()).select_from(inside))


def commits_outside(session: Session, within: Order) -> int:
    """How many commits with results lie off `within`: on a branch's first-parent order, commits
    of a branch never merged, or never placed on it; their points are not checked."""
    return len(set(session.scalars(select(Result.commit_id).distinct())) - within.commits.keys())


def load(session: Session, branch: str, within: Order | None = None) -> list[Series]:
    """Every series with at least one point among the commits of `within` (default: `order`).

    Rows are read as columns, not as objects (a whole history is tens of thousands of them); a
    series' parameters are decoded once, from its first row."""
    within = within or order(session, branch)
    benches = {b.id: b for b in session.scalars(select(Benchmark))}
    names = {"machine": dict(session.execute(select(Machine.id, Machine.name)).all()),
             "environment": dict(session.execute(select(Environment.id, Environment.name)).all())}
    query = (select(Result.machine_id, Result.environment_id, Result.benchmark_id, Result.params_key,
                    Result.commit_id, Result.status, Result.value, Result.samples)
             .order_by(Result.machine_id, Result.environment_id, Result.benchmark_id, Result.params_key))
    out = []
    for key, points in _group(session.execute(query), within.commits):
        bench = benches[key.benchmark_id]
        params = session.scalar(select(Result.params).where(
            Result.machine_id == key.machine_id, Result.environment_id == key.environment_id,
            Result.benchmark_id == key.benchmark_id, Result.params_key == key.params_key).limit(1))
        out.append(Series(key, names["machine"][key.machine_id], names["environment"][key.environment_id],
                          bench.name, bench.subject, bench.metric, bench.unit, bool(bench.higher_is_better),
                          dict(params or {}), points))
    return out


def superseded(all_series: list[Series]) -> set[SeriesKey]:
    """The series a newer asv version of their benchmark goes on from (the same machine,
    environment and parameters, its first point after their last): they will have no newer
    points, so a step at their end can never be decided."""
    spans: dict[tuple[int, int, str, str], list[tuple[int, int, SeriesKey]]] = {}
    for s in all_series:
        if s.points:
            spans.setdefault((s.key.machine_id, s.key.environment_id, s.benchmark, s.key.params_key), []).append(
                (s.points[0].commit.rank, s.points[-1].commit.rank, s.key))
    return {key for group in spans.values() for _, last, key in group if any(first > last for first, _, _ in group)}


def _group(rows, commits: dict[int, CommitRef]) -> Iterator[tuple[SeriesKey, tuple[SeriesPoint, ...]]]:
    current: SeriesKey | None = None
    points: list[SeriesPoint] = []
    for machine_id, env_id, bench_id, params_key, commit_id, status, value, samples in rows:
        key = SeriesKey(machine_id, env_id, bench_id, params_key)
        if key != current:
            if points:
                yield current, tuple(sorted(points, key=lambda p: p.commit.rank))
            current, points = key, []
        if commit_id in commits:
            points.append(_point(status, value, samples, commits[commit_id]))
    if points:
        yield current, tuple(sorted(points, key=lambda p: p.commit.rank))


def measured_with(session: Session, machine: str | None = None,
                  benchmark: str | None = None) -> dict[tuple[str, str, str], str]:
    """The profile each series' newest result was measured with (what measuring it again should
    use; the newest by the commit's position, then as stored), by (machine, benchmark, parameter
    key); only `machine`'s and `benchmark`'s where given."""
    query = select(Machine.name, Benchmark.name, Result.params_key, Result.profile) \
        .join(Machine, Result.machine_id == Machine.id).join(Benchmark, Result.benchmark_id == Benchmark.id) \
        .join(Commit, Result.commit_id == Commit.id).where(Result.profile.is_not(None))
    query = query.where(Machine.name == machine) if machine is not None else query
    query = query.where(Benchmark.name == benchmark) if benchmark is not None else query
    # oldest first, so the newest commit's (by its place on the branch, then as stored) is kept:
    # a backfill of old commits at another profile does not decide it
    query = query.order_by(func.coalesce(Commit.position, -1), Result.id)
    return {(m, b, key): profile for m, b, key, profile in session.execute(query)}
