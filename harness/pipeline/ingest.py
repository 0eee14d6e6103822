"""Ingest: asv results files (and their sidecar diagnostics) into the database.

Each results file is taken in one transaction: all its rows or none, written in bulk with the
database's INSERT .. ON CONFLICT, so several machines ingesting into one database at once
neither fail nor duplicate. A file is identified by the hash of its bytes, so ingesting it
again adds nothing (of two processes taking the same file at once, one stores it and the other
counts it as already known); a rewritten file (asv merges new benchmarks into the file of a commit)
replaces the rows it covers. Everything in a file is checked before anything of it is stored
(`proofbench.pipeline.results_file`): a file that cannot be taken is refused with one line
naming it, the benchmark and the field, and the other files still go in.

Rows are labelled from data, never by importing subjects: the suite's labels
(`proofbench.pipeline.labels`) say what proofbench's own benchmarks mean; any other benchmark
is a plain asv benchmark, described by its results directory's benchmarks.json (and relabelled: `_settled`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from sqlalchemy import Engine, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from proofbench import git
from proofbench.claim import Claim
from proofbench.db.alerts import Alert
from proofbench.db.commits import place
from proofbench.db.fleet import store_machine
from proofbench.db.models import Benchmark, ClaimRow, Commit, Environment, IngestedFile, Result
from proofbench.db.rows import conflict_insert, insert_or_get, upsert
from proofbench.errors import InputError
from proofbench.measure import sidecar
from proofbench.pipeline import diagnostics as diagnostics_mod
from proofbench.pipeline import labels, results_file
from proofbench.pipeline.asv import Layout
from proofbench.pipeline.labels import AsvEntry, Label
from proofbench.pipeline.results_file import Point, ResultsFile

_FINGERPRINT = 64  # characters a machine fingerprint may have (its column)
_RESULT_KEY = ("benchmark_id", "machine_id", "commit_id", "environment_id", "params_key")
_TIMING = "time"  # the metric of a timing: asv's type of a time_ benchmark, and proofbench's TIME metric


@dataclass
class IngestReport:
    """What one ingest did: files it stored, files already known (stored before, or by another
    process while this one read them), rows written, refusals (one line each, naming the file)
    and warnings (files still taken); `relabelled`: benchmarks.json's path: benchmarks it relabelled."""

    ingested: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    rows: int = 0
    refused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    placed: int = 0
    relabelled: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Profiles:
    """Machine profiles `proofbench run` left (by machine name), and those that are unusable
    (by machine name: why), so that one bad profile refuses only its own machine's files."""

    usable: dict[str, dict] = field(default_factory=dict)
    unusable: dict[str, str] = field(default_factory=dict)

    def merged(self, other: "Profiles") -> "Profiles":
        return Profiles({**self.usable, **other.usable}, {**self.unusable, **other.unusable})


@dataclass(frozen=True)
class Sources:
    """Everything ingest needs besides the results: meanings, diagnostics, machine profiles,
    and the repository (commit metadata; with `branch`, each commit's place on its history)."""

    labels: dict[str, Label]
    diagnostics: dict[tuple, list[sidecar.Record]]
    repo: Path | None = None
    profiles: Profiles = field(default_factory=Profiles)
    branch: str | None = None


def machine_profiles(directory: Path) -> Profiles:
    """Hardware profiles `proofbench run` left in `directory` (`<machine name>.json`)."""
    usable, unusable = {}, {}
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else ():
        try:
            usable[path.stem] = _profile(path)
        except InputError as exc:
            unusable[path.stem] = str(exc)
    return Profiles(usable, unusable)


def _profile(path: Path) -> dict:
    profile = results_file.read_json(path)
    if not isinstance(profile, dict):
        raise InputError(f"{path}: expected a JSON object (a machine profile)")
    fingerprint = profile.get("fingerprint")
    if not isinstance(fingerprint, str) or not fingerprint.isprintable() or not 0 < len(fingerprint) <= _FINGERPRINT:
        raise InputError(f"{path}: fingerprint: expected a string of 1 to {_FINGERPRINT} printable characters")
    results_file.check_stored(path, "profile", profile)
    return profile


class _Known:
    """Row ids made or found by earlier files of this ingest (committed, so still there)."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.asv: dict[Path, dict[str, AsvEntry]] = {}
        self.numbered: dict[int, set[int]] | None = None  # file id: its plain rows named p1..pn (at a known file)

    def get(self, session: Session, key: tuple, make) -> tuple[int, bool]:
        """The id under `key`, from an earlier file or made now (then True: keep it only after commit)."""
        if key in self.ids:
            return self.ids[key], False
        return make(session), True


def ingest(engine: Engine, paths: list[Path], sources: Sources) -> IngestReport:
    """Take each results file in its own transaction (a known one: its fallback rows relabelled); refusals
    are collected, not raised. With `sources.branch`, the commits are then placed on its first-parent history."""
    history = git.branch_history(sources.repo, sources.branch) if sources.repo and sources.branch else None
    report, known = IngestReport(), _Known()
    for path in paths:
        try:
            if relabelled := _ingest_file(engine, path, sources, report, known):
                report.relabelled.setdefault(str(results_file.benchmarks_file(path)), []).extend(relabelled)
        except InputError as exc:
            report.refused.append(str(exc))
    if history is not None:
        with Session(engine) as session, session.begin():
            report.placed = place(session, history, sources.branch)
    report.warnings.extend(f"{where}: {len(names)} benchmark(s) relabelled from it (first: {names[0][:200]!r}); "
                           f"their parameters p1..pn renamed" for where, names in report.relabelled.items())
    return report


def _ingest_file(engine: Engine, path: Path, sources: Sources, report: IngestReport, known: _Known) -> list[str]:
    data = results_file.load_bytes(path)
    digest = hashlib.sha256(data).hexdigest()
    with Session(engine) as session, session.begin():
        known_id = session.scalar(select(IngestedFile.id).where(IngestedFile.sha256 == digest))
        relabelled = _relabel_known(session, path, known_id, known, report) if known_id is not None else []
    if known_id is not None:
        report.unchanged.append(str(path))
        return relabelled
    parsed = results_file.parse(path, data)
    if parsed.machine in sources.profiles.unusable:
        raise InputError(f"{path}: machine {parsed.machine!r}: its profile is unusable: "
                         f"{sources.profiles.unusable[parsed.machine]}")
    entries = _asv_entries(path, known, report) if any(n not in sources.labels for n in parsed.rows) else {}
    named = _labels(parsed, sources.labels, entries)
    made: dict[tuple, int] = {}
    with Session(engine) as session, session.begin():
        file_id = _new_file(session, digest, path, len(parsed.points))
        if file_id is None:
            report.unchanged.append(str(path))
            return []
        keys = _keys(session, parsed, sources, known, made)
        benchmarks = {name: _benchmark_id(session, name, parsed.rows[name].version, label, known, made)
                      for name, label in named.items()}
        rows, relabelled = _settled(session, set(benchmarks.values()), entries)
        named = {n: rows[n] if n in rows and len(rows[n].param_names) == len(label.param_names) else label
                 for n, label in named.items()}
        unmeasured = {(p.benchmark, p.key): why for p in parsed.points if (why := _not_a_time(p, named[p.benchmark]))}
        upsert(session, Result, [_values(p, parsed, keys, benchmarks[p.benchmark], named[p.benchmark], file_id,
                                         sources.diagnostics, unmeasured.get((p.benchmark, p.key), ""))
                                 for p in parsed.points], _RESULT_KEY)
    known.ids.update(made)
    report.ingested.append(str(path))
    report.rows += len(parsed.points)
    if unmeasured:
        report.warnings.append(_unmeasured_line(path, unmeasured))
    return relabelled


def _new_file(session: Session, digest: str, path: Path, results: int) -> int | None:
    """The id of the file's row, made now; None when another process stored the same bytes
    after this one looked (the hash is unique: its insert fails, in a savepoint, and nothing of
    the file is written here), so that each process counts only the files it stored."""
    row = IngestedFile(sha256=digest, path=_storable_path(path), results=results)
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        return None
    return row.id


def _storable_path(path: Path) -> str:
    # a file name that is not UTF-8 (undecodable bytes) is stored with them escaped
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def _asv_entries(path: Path, known: _Known, report: IngestReport) -> dict[str, AsvEntry]:
    # benchmarks.json of the file's results directory, read once per ingest (for a new file with a
    # benchmark the suite's labels do not describe, or a known file with a fallback row)
    where = results_file.benchmarks_file(path)
    if where not in known.asv:
        known.asv[where], warnings = labels.read_asv(where)
        report.warnings.extend(warnings)
    return known.asv[where]


def _relabel_known(session: Session, path: Path, file_id: int, known: _Known, report: IngestReport) -> list[str]:
    """Relabel from its benchmarks.json the fallback rows (parameters p1..pn) of a known file's results."""
    if known.numbered is None:
        rows = session.execute(select(Benchmark.id, Benchmark.param_names).where(Benchmark.kind == labels.PLAIN))
        ids, known.numbered = [id_ for id_, names in rows if names and names == labels.numbered(len(names))], {}
        for id_, file in session.execute(select(Result.benchmark_id, Result.file_id).distinct()
                                         .where(Result.benchmark_id.in_(ids))) if ids else ():
            known.numbered.setdefault(file, set()).add(id_)
    ids = known.numbered.get(file_id)
    return _settled(session, ids, _asv_entries(path, known, report))[1] if ids else []


def _settled(session: Session, ids: set[int], entries: dict[str, AsvEntry]) -> tuple[dict[str, Label], list[str]]:
    """The label each row in `ids` holds (by name: it names its results' parameters), and the rows relabelled: a
    fallback row (`labels.relabelled`) takes the label `entries` gives, its results' and alerts' parameters too."""
    out, relabelled = {}, []
    for row in session.scalars(select(Benchmark).where(Benchmark.id.in_(ids))).all():
        stored = Label(**{f.name: getattr(row, f.name) for f in fields(Label)})
        out[row.name] = new = labels.relabelled(stored, row.name, entries.get(row.name)) or stored
        if new is not stored:
            relabelled.append(row.name)
            session.execute(update(Benchmark).where(Benchmark.id == row.id).values(**asdict(new)))
            renames = dict(zip(stored.param_names, new.param_names))
            for model in (Result, Alert):
                found = session.execute(select(model.id, model.params).where(model.benchmark_id == row.id)).all()
                renamed = [{"id": id_, "params": {renames[k]: params[k] for k in renames}} for id_, params in found
                           if isinstance(params, dict) and set(params) == set(renames)]
                if renamed:
                    session.execute(update(model), renamed)
    return out, relabelled


def _labels(parsed: ResultsFile, own: dict[str, Label], asv: dict[str, AsvEntry]) -> dict[str, Label]:
    """Each benchmark's label: the suite's, else a plain one; as many parameter lists as the
    suite's label names, or the file is refused."""
    out = {}
    for name, row in parsed.rows.items():
        label = own.get(name)
        where = f"{parsed.path}: benchmark {name[:200]!r}: params"
        if label is not None and len(row.params) != len(label.param_names):
            raise InputError(f"{where}: {len(row.params)} parameter list(s), its label names "
                             f"{len(label.param_names)} ({', '.join(label.param_names)})")
        out[name] = label or labels.plain(name, row.version, len(row.params), asv.get(name))
    return out


def _keys(session: Session, parsed: ResultsFile, sources: Sources, known: _Known, made: dict) -> dict[str, int]:
    profile = sources.profiles.usable.get(parsed.machine) or parsed.machine_params
    fingerprint = profile.get("fingerprint") or parsed.machine_params.get("proofbench_fingerprint")
    if not isinstance(fingerprint, str) or not fingerprint.isprintable() or not 0 < len(fingerprint) <= _FINGERPRINT:
        fingerprint = _fingerprint(parsed.machine_params)
    out = {}
    for name, key, make in (
            ("machine", ("machine", parsed.machine, fingerprint),
             lambda s: store_machine(s, parsed.machine, fingerprint, profile).id),
            ("environment", ("environment", parsed.env),
             lambda s: insert_or_get(s, Environment, {"name": parsed.env},
                                     {"python": parsed.python, "requirements": parsed.requirements})),
            ("commit", ("commit", parsed.commit), lambda s: _commit_id(s, parsed, sources.repo))):
        out[name], new = known.get(session, key, make)
        if new:
            made[key] = out[name]
    return out


def _commit_id(session: Session, parsed: ResultsFile, repo: Path | None) -> int:
    found = session.scalar(select(Commit).where(Commit.hash == parsed.commit))
    if found is None:
        return insert_or_get(session, Commit, {"hash": parsed.commit},
                             {"results_date": parsed.date, **_commit_metadata(repo, parsed.commit)})
    if found.results_date is None and parsed.date is not None:
        session.execute(update(Commit).where(Commit.id == found.id, Commit.results_date.is_(None))
                        .values(results_date=parsed.date))
    return found.id


def _fingerprint(params: dict) -> str:
    # Without a captured profile, asv's own machine description stands in for one.
    keys = ("machine", "arch", "cpu", "num_cpu", "ram", "os")
    text = json.dumps({k: params.get(k) for k in keys}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _benchmark_id(session: Session, name: str, version: str, label: Label, known: _Known, made: dict) -> int:
    key = ("benchmark", name, version)
    found, new = known.get(session, key, lambda s: insert_or_get(s, Benchmark, {"name": name, "version": version}, {
        column: value for column, value in asdict(label).items() if column != "version"}))  # its label's columns
    if new:
        made[key] = found
    return found


def _not_a_time(point: Point, label: Label) -> str:
    """Why a timing asv recorded as measured is none: a time at or below zero (in its value or a
    raw sample) is no duration. Stored as failed with this reason, as asv's null is, the result
    is neither drawn nor read by the detector; the file's other results still go in."""
    if label.metric != _TIMING or point.status != "ok":
        return ""
    if point.value <= 0:
        return f"time {point.value:g} s is not a measurement (a time must be above zero)"
    lowest = min(point.samples or (point.value,))
    return f"raw sample {lowest:g} s is not a measurement (a time must be above zero)" if lowest <= 0 else ""


def _unmeasured_line(path: Path, unmeasured: dict[tuple[str, str], str]) -> str:
    (benchmark, key), why = next(iter(unmeasured.items()))
    return (f"{path}: {len(unmeasured)} timing(s) at or below zero stored as failed (first: benchmark "
            f"{benchmark[:200]!r}, parameters {key[:200]}: {why})")


def _values(point: Point, parsed: ResultsFile, keys: dict[str, int], benchmark_id: int, label: Label,
            file_id: int, diagnostics: dict, unmeasured: str) -> dict:
    values = {"benchmark_id": benchmark_id, "machine_id": keys["machine"], "commit_id": keys["commit"],
              "environment_id": keys["environment"], "params_key": point.key, "file_id": file_id,
              "params": dict(zip(label.param_names, point.params)), "value": point.value, "status": point.status,
              "samples": list(point.samples) if point.samples else None, "number": point.number,
              "started_at": point.started_at, "duration": point.duration, "reason": "",
              "other_load_cores": None, "busy": None, "threads": None, "profile": None, "equivalent": None,
              "rounds": None, "gpu": None}
    values.update(diagnostics_mod.diagnosed(point, parsed, diagnostics) if diagnostics else {})
    if point.status == "failed" and not values["reason"]:
        values["reason"] = "failed; no reason was recorded (crashed, killed or timed out)"
    if unmeasured:
        values.update(status="failed", value=None, samples=None, reason=unmeasured)
    return values


def _commit_metadata(repo: Path | None, commit: str) -> dict:
    info = git.commit_info(repo, commit) if repo is not None else None
    if info is None:
        return {}
    return {"subject": info.subject, "author": info.author[:200], "authored_at": info.authored_at,
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


def sources(layout: Layout, repo: Path | None, branch: str | None = None) -> Sources:
    """What ingest needs besides the results of a project's runs: the suite's labels, the runs'
    diagnostics, the machines' profiles, and the repository for commit metadata (and order)."""
    return Sources(labels=labels.read(layout.benchmarks), diagnostics=diagnostics_mod.load(layout.sidecar), repo=repo,
                   profiles=machine_profiles(layout.machines), branch=branch)


def ingest_run(engine: Engine, layout: Layout, paths: list[Path], claims: tuple[Claim, ...],
               repo: Path | None) -> IngestReport:
    """What every measuring command does with its results: the claims, then the files."""
    sync_claims(engine, claims)
    return ingest(engine, paths, sources(layout, repo))
