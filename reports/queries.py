"""What the report reads beyond proofbench.analysis.comparison: commit order, every series' history in one
query (subjects' and plain asv benchmarks'), and when, at which commit and with which profile each
machine's latest data was measured.

Commit order is `proofbench.db.commits.ordered`'s. The history query reads per-commit values only
(no raw samples, no JSON), once for the whole site; raw samples are read for latest runs only,
through `proofbench.analysis.comparison.figures`.
"""
from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field

from sqlalchemy import case, func, literal, or_, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.orm import Session

from proofbench.analysis.comparison import SubjectFigures, figures
from proofbench.db.commits import aware, ordered
from proofbench.db.models import Benchmark, Commit, Machine, Result


@dataclass(frozen=True)
class Series:
    """One history: a benchmark's value on one machine, environment and parameter set.

    `ranks` are indexes into `History.commits`, ascending; `values` are NaN where the run
    failed or was skipped (`reasons` says why, by rank). `params` are the parameter values in
    the benchmark's order; `variant` and `size` name a subject's (empty for a plain benchmark).
    """

    machine_id: int
    environment_id: int
    benchmark: Benchmark
    params_key: str
    variant: str
    size: str
    ranks: list[int]
    values: list[float]
    reasons: dict[int, str] = field(default_factory=dict)
    params: tuple[str, ...] = ()

    @property
    def last_rank(self) -> int:
        """The rank of the newest commit measured."""
        return self.ranks[-1]

    @property
    def key(self) -> tuple[int, int, int, str]:
        """(machine, environment, benchmark, params key): what identifies it in the database."""
        return self.machine_id, self.environment_id, self.benchmark.id, self.params_key


@dataclass(frozen=True)
class History:
    """Every commit with results, in report order, and every series over them: the subjects'
    (`series`) and the plain asv benchmarks' (`plain`)."""

    commits: list[Commit]
    series: list[Series]
    plain: list[Series] = field(default_factory=list)

    def commit(self, rank: int) -> Commit:
        """The commit at `rank` in report order."""
        return self.commits[rank]


@dataclass(frozen=True)
class RunInfo:
    """When and how one machine measured one commit: profiles used, last start time, row count."""

    profiles: tuple[str, ...]
    measured_at: dt.datetime | None
    results: int


def history(session: Session, metrics: tuple[str, ...] | None = None) -> History:
    """Every series (of the subjects' given metrics, default all, and of every plain benchmark),
    aggregated per series by the database in one query."""
    commits = ordered(session)
    rank = {c.id: i for i, c in enumerate(commits)}
    wanted = or_(Benchmark.metric.in_(metrics), Benchmark.kind == "plain") if metrics else Benchmark.id.is_not(None)
    benches = {b.id: b for b in session.scalars(select(Benchmark).where(wanted))}
    reasons: dict[tuple, dict[int, str]] = {}
    for machine_id, env_id, bench_id, key, commit_id, status, reason in session.execute(
            select(Result.machine_id, Result.environment_id, Result.benchmark_id, Result.params_key,
                   Result.commit_id, Result.status, Result.reason)
            .where(Result.benchmark_id.in_(list(benches)), Result.status != "ok")):
        reasons.setdefault((machine_id, env_id, bench_id, key), {})[rank[commit_id]] = reason or status
    aggregated = _aggregated(session, list(benches))
    params = _params(session, {k[3] for k, _, _ in aggregated})
    series: dict[str, list[Series]] = {"subject": [], "plain": []}
    for key, commit_ids, values in aggregated:
        ranks = [rank[c] for c in commit_ids]
        if ranks != sorted(ranks):
            ranks, values = map(list, zip(*sorted(zip(ranks, values), key=lambda p: p[0])))
        bench = benches[key[2]]
        variant, size, values_of = params[key[3]]
        shown = ("", "") if bench.kind == "plain" else (variant, size)
        series["plain" if bench.kind == "plain" else "subject"].append(
            Series(key[0], key[1], bench, key[3], *shown, ranks, values, reasons.get(key, {}), values_of))
    return History(commits, series["subject"], series["plain"])


def _aggregated(session: Session, bench_ids: list[int]) -> list[tuple[tuple, list[int], list[float]]]:
    """(series key, commit ids, values) per series; a value is NaN where the run was not ok.

    SQLite and PostgreSQL build each series' lists themselves (group_concat, array_agg), which
    is several times faster than fetching one row per point; other databases fetch rows.
    """
    key = (Result.machine_id, Result.environment_id, Result.benchmark_id, Result.params_key)
    ok = (Result.status == "ok") & Result.value.is_not(None)
    where = Result.benchmark_id.in_(bench_ids)
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        text = case((ok, func.printf("%.17g", Result.value)), else_=literal("nan"))
        rows = session.execute(select(*key, func.group_concat(Result.commit_id), func.group_concat(text))
                               .where(where).group_by(*key))
        return [(tuple(r[:4]), list(map(int, r[4].split(","))), list(map(float, r[5].split(",")))) for r in rows]
    if dialect == "postgresql":
        value = case((ok, Result.value), else_=literal(math.nan))
        rows = session.execute(select(*key, func.array_agg(aggregate_order_by(Result.commit_id, Result.commit_id)),
                                      func.array_agg(aggregate_order_by(value, Result.commit_id)))
                               .where(where).group_by(*key))
        return [(tuple(r[:4]), list(r[4]), [float(v) for v in r[5]]) for r in rows]
    grouped: dict[tuple, tuple[list[int], list[float]]] = {}
    for *k, commit_id, status, v in session.execute(select(*key, Result.commit_id, Result.status, Result.value)
                                                    .where(where)):
        ids, values = grouped.setdefault(tuple(k), ([], []))
        ids.append(commit_id)
        values.append(float(v) if status == "ok" and v is not None else math.nan)
    return [(k, ids, values) for k, (ids, values) in grouped.items()]


def _params(session: Session, keys: set[str]) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """(variant, size, every value) of each params key (ingest's JSON list of the values); a key
    that is not one is looked up."""
    out = {}
    for key in keys:
        try:
            decoded = json.loads(key)
        except ValueError:
            decoded = None
        if isinstance(decoded, list) and all(isinstance(x, str) for x in decoded):
            pair = decoded if len(decoded) == 2 else ("", "")
            out[key] = (pair[0], pair[1], tuple(decoded))
        else:
            stored = session.scalar(select(Result.params).where(Result.params_key == key).limit(1)) or {}
            out[key] = (str(stored.get("variant", "")), str(stored.get("size", "")),
                        tuple(str(v) for v in stored.values()))
    return out


def run_info(session: Session, machine_id: int, commit_ids: set[int]) -> dict[int, RunInfo]:
    """Profiles, latest start time and result count of `machine_id`'s runs at these commits."""
    rows = session.execute(select(Result.commit_id, Result.profile, func.max(Result.started_at), func.count())
                           .where(Result.machine_id == machine_id, Result.commit_id.in_(commit_ids))
                           .group_by(Result.commit_id, Result.profile))
    out: dict[int, RunInfo] = {}
    for commit_id, profile, started, count in rows:
        old = out.get(commit_id, RunInfo((), None, 0))
        times = [t for t in (old.measured_at, aware(started)) if t is not None]
        profiles = old.profiles + ((profile,) if profile else ())
        out[commit_id] = RunInfo(tuple(sorted(profiles)), max(times) if times else None, old.results + count)
    return out


def latest_figures(session: Session, machine: Machine, series: list[Series],
                   commits: list[Commit], environment_id: int | None = None) -> list[SubjectFigures]:
    """Each subject and size at the newest commit that measured it on `machine` (in one asv
    environment, where `environment_id` names it).

    One `figures` query per distinct newest commit (usually one or two), not one per subject.
    """
    newest: dict[tuple[str, str], int] = {}
    for s in series:
        if s.machine_id == machine.id and environment_id in (None, s.environment_id):
            key = (s.benchmark.subject, s.size)
            newest[key] = max(newest.get(key, -1), s.last_rank)
    out = []
    for rank in sorted(set(newest.values()), reverse=True):
        for fig in figures(session, machine, commits[rank].id, environment_id=environment_id):
            if newest.get((fig.subject, fig.size)) == rank:
                out.append(fig)
    return sorted(out, key=lambda f: (f.area, f.subject, f.size))
