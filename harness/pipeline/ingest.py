"""Ingest: asv results files (and their sidecar diagnostics) into the database.

Each results file is taken in one transaction: all its rows or none. A file is identified
by the hash of its bytes, so ingesting it again adds nothing; a rewritten file (asv merges
new benchmarks into the file of a commit) replaces the rows it covers. A file that cannot be
read is refused with one line naming it, and the other files still go in.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import Session

from proofbench import git
from proofbench.claim import Claim
from proofbench.db.fleet import store_machine
from proofbench.db.models import Benchmark, ClaimRow, Commit, Environment, IngestedFile, Result
from proofbench.db.rows import conflict_insert, insert_or_get
from proofbench.errors import InputError
from proofbench.measure import sidecar
from proofbench.pipeline import asv_log, results_file
from proofbench.pipeline.asv import Layout
from proofbench.pipeline.generate import BenchmarkInfo, benchmark_index
from proofbench.pipeline.results_file import Point, ResultsFile
from proofbench.registry import Registry


@dataclass
class IngestReport:
    """What one ingest did: files taken in, files already known, rows written, refusals."""

    ingested: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    rows: int = 0
    refused: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Sources:
    """Everything ingest needs besides the results: meanings, diagnostics, commit metadata."""

    index: dict[str, BenchmarkInfo]
    diagnostics: dict[tuple, list[sidecar.Record]]
    repo: Path | None = None
    machine_profiles: dict[str, dict] = field(default_factory=dict)


def machine_profiles(directory: Path) -> dict[str, dict]:
    """Hardware profiles `proofbench run` left in `directory` (`<machine name>.json`), by name."""
    profiles = {}
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else ():
        try:
            profiles[path.stem] = json.loads(path.read_text())
        except ValueError as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
    return profiles


def load_diagnostics(path: Path | None) -> dict[tuple, list[sidecar.Record]]:
    """Sidecar records grouped by (commit, env, benchmark, params)."""
    grouped: dict[tuple, list[sidecar.Record]] = {}
    for record in sidecar.read(path) if path else ():
        grouped.setdefault(record.key(), []).append(record)
    return grouped


def ingest(engine: Engine, paths: list[Path], sources: Sources) -> IngestReport:
    """Take each results file in its own transaction; refusals are collected, not raised."""
    report = IngestReport()
    for path in paths:
        try:
            _ingest_file(engine, path, sources, report)
        except InputError as exc:
            report.refused.append(str(exc))
    return report


def _ingest_file(engine: Engine, path: Path, sources: Sources, report: IngestReport) -> None:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with Session(engine) as session, session.begin():
        if session.scalar(select(IngestedFile.id).where(IngestedFile.sha256 == digest)) is not None:
            report.unchanged.append(str(path))
            return
    parsed = results_file.read(path)
    unknown = sorted({p.benchmark for p in parsed.points} - set(sources.index))
    if unknown:
        raise InputError(f"{path}: unknown benchmark {unknown[0]!r}"
                         + (f" and {len(unknown) - 1} more" if len(unknown) > 1 else "")
                         + " (not defined by any registered subject)")
    with Session(engine) as session, session.begin():
        file_id = insert_or_get(session, IngestedFile, {"sha256": digest},
                                 {"path": str(path), "results": len(parsed.points)})
        keys = _keys(session, parsed, sources)
        for point in parsed.points:
            _store(session, point, parsed, keys, file_id, sources)
    report.ingested.append(str(path))
    report.rows += len(parsed.points)


def _keys(session: Session, parsed: ResultsFile, sources: Sources) -> dict[str, int]:
    profile = sources.machine_profiles.get(parsed.machine) or parsed.machine_params
    fingerprint = (profile.get("fingerprint") or parsed.machine_params.get("proofbench_fingerprint")
                   or _fingerprint(parsed.machine_params))
    machine_id = store_machine(session, parsed.machine, fingerprint, profile).id
    env_id = insert_or_get(session, Environment, {"name": parsed.env},
                            {"python": parsed.python, "requirements": parsed.requirements})
    commit_id = insert_or_get(session, Commit, {"hash": parsed.commit}, _commit_metadata(sources.repo, parsed.commit))
    return {"machine": machine_id, "environment": env_id, "commit": commit_id}


def _fingerprint(params: dict) -> str:
    # Without a captured profile, asv's own machine description stands in for one.
    keys = ("machine", "arch", "cpu", "num_cpu", "ram", "os")
    text = json.dumps({k: params.get(k) for k in keys}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _store(session: Session, point: Point, parsed: ResultsFile, keys: dict[str, int], file_id: int,
           sources: Sources) -> None:
    info = sources.index[point.benchmark]
    benchmark_id = insert_or_get(session, Benchmark, {"name": point.benchmark, "version": point.version},
                                  _benchmark_values(info))
    params = dict(zip(("variant", "size"), point.params)) if len(point.params) == 2 else {"params": list(point.params)}
    params_key = json.dumps(list(point.params))
    values = {"file_id": file_id, "params": params, "value": point.value, "status": point.status,
              "samples": list(point.samples) if point.samples else None, "number": point.number,
              "started_at": point.started_at, "duration": point.duration, "reason": ""}
    values.update(_diagnosed(point, parsed, sources.diagnostics))
    row = session.scalar(select(Result).where(
        Result.benchmark_id == benchmark_id, Result.machine_id == keys["machine"],
        Result.commit_id == keys["commit"], Result.environment_id == keys["environment"],
        Result.params_key == params_key))
    if row is None:
        row = Result(benchmark_id=benchmark_id, machine_id=keys["machine"], commit_id=keys["commit"],
                     environment_id=keys["environment"], params_key=params_key)
        session.add(row)
    for key, value in values.items():
        setattr(row, key, value)


def _benchmark_values(info: BenchmarkInfo) -> dict:
    subject = info.subject
    return {"subject": subject.key, "area": subject.area, "metric": info.metric.name, "unit": info.metric.unit,
            "higher_is_better": info.metric.higher_is_better, "item": subject.item,
            "param_names": ["variant", "size"],
            "details": {"description": subject.description,
                        "variants": {v.name: {"description": v.description, "requires": list(v.requires),
                                              **({"parts": list(v.parts)} if subject.parts else {})}
                                     for v in subject.variants},
                        **({"parts": [asdict(p) for p in subject.parts]} if subject.parts else {}),
                        "equivalence": {"metric": subject.equivalence.metric.name,
                                        "tolerance": subject.equivalence.tolerance,
                                        "higher_is_better": subject.equivalence.metric.higher_is_better,
                                        "description": subject.equivalence.description},
                        "rates": [m.metric.name for m in subject.measures if m.rate]}}


def _diagnosed(point: Point, parsed: ResultsFile, diagnostics: dict) -> dict:
    # Records of this method, and class-level ones (setup skipped or failed), in file order;
    # the writer may not have known the environment's name (asv's existing environment).
    klass, method = point.benchmark.rsplit(".", 1)
    out: dict = {}
    envs = dict.fromkeys((parsed.env, ""))
    records = [r for params in (point.params, ()) for env in envs
               for r in diagnostics.get((parsed.commit, env, klass, params), [])
               if r.details.get("method") in (None, method)]
    for record in records:
        if record.details.get("source") == asv_log.LOG_SOURCE:
            continue
        if "equivalent" in record.details:
            out["equivalent"] = bool(record.details["equivalent"])
        if record.status == "ok" and "threads" in record.details:
            out.update(other_load_cores=record.details.get("other_load_cores"), busy=record.details.get("busy"),
                       threads=record.details.get("threads"), profile=record.details.get("profile"))
    reason = _reason(records, point.status == "failed")
    if reason:
        out["reason"] = reason
    elif point.status == "failed":
        out["reason"] = "failed; no reason was recorded (crashed, killed or timed out)"
    return out


def _reason(records: list[sidecar.Record], failed: bool) -> str:
    # The benchmark process's own word first (the last one), then what asv printed about this
    # parameter set, then what it printed about the whole benchmark; asv's only for a failure.
    ranked: dict[int, str] = {}
    for record in records:
        from_log = record.details.get("source") == asv_log.LOG_SOURCE
        if record.status in ("failed", "skipped") and record.reason and (failed or not from_log):
            ranked[int(from_log) + int(not record.params)] = record.reason
    return ranked[min(ranked)] if ranked else ""


def _commit_metadata(repo: Path | None, commit: str) -> dict:
    info = git.commit_info(repo, commit) if repo is not None else None
    if info is None:
        return {}
    return {"subject": info.subject, "author": info.author, "authored_at": info.authored_at,
            "committed_at": info.committed_at}


def sync_claims(engine: Engine, claims: tuple[Claim, ...]) -> None:
    """Make the claims table match the claims file (one transaction).

    Written as upserts (INSERT .. ON CONFLICT DO UPDATE) so that several processes syncing at
    once, as a fleet ingesting together does, neither fail on each other's rows nor add twice.
    """
    keys = ("subject", "variant", "source", "quote", "kind", "metric", "low", "high", "device", "note")
    with Session(engine) as session, session.begin():
        insert = conflict_insert(session)
        for claim in claims:
            values = {key: getattr(claim, key) for key in keys}
            if insert is None:
                session.merge(ClaimRow(id=claim.id, **values))
            else:
                session.execute(insert(ClaimRow).values(id=claim.id, **values)
                                .on_conflict_do_update(index_elements=[ClaimRow.id], set_=values))
        session.execute(delete(ClaimRow).where(ClaimRow.id.not_in([claim.id for claim in claims])))


def sources(layout: Layout, registry: Registry | None, repo: Path | None) -> Sources:
    """What ingest needs besides the results of a project's runs: the meaning of its benchmarks,
    the run's diagnostics, the machines' profiles, and the repository for commit metadata."""
    return Sources(index=benchmark_index(registry) if registry is not None else {},
                   diagnostics=load_diagnostics(layout.sidecar), repo=repo,
                   machine_profiles=machine_profiles(layout.machines))


def ingest_run(engine: Engine, layout: Layout, paths: list[Path], registry: Registry | None,
               claims: tuple[Claim, ...], repo: Path | None) -> IngestReport:
    """What every measuring command does with its results: the claims, then the files."""
    sync_claims(engine, claims)
    return ingest(engine, paths, sources(layout, registry, repo))
