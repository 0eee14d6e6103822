"""Renders the static HTML site from the database with Jinja2 (autoescape on).

Pages: index.html (subjects x machines, and the plain asv benchmarks by module), claims.html
(the claims ledger), machines.html (hardware side by side), regressions.html (change points),
commits.html (commit order), one page per subject under subjects/ and one per plain asv
benchmark under benchmarks/. The database is read once (reports/queries.py); every page
is written through reports/output.py, so no file lands outside the output directory.
"""
from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from proofbench.analysis.comparison import SubjectFigures, figures, machines
from proofbench.analysis.shift import DEFAULT
from proofbench.analysis.verdict import Verdict, judge
from proofbench.claim import Claim
from proofbench.db.commits import basis, latest
from proofbench.db.models import ClaimRow, Commit, Machine
from proofbench.db.models import Environment as EnvironmentRow
from proofbench.db.profiles import CalibrationRow, VariantProfileRow, calibrations, latest_profiles
from proofbench.errors import DeclarationError
from proofbench.reports import changes, matrix, pipelines, plain, queries
from proofbench.reports import profiles as why
from proofbench.reports.formatting import FILTERS, visible
from proofbench.reports.machines import MachineColumn, column, has_gpu, labels, largest, profile_rows
from proofbench.reports.output import SiteWriter
from proofbench.reports.subjects import ChangeNote, SubjectPage, build, detectable

STATIC_DIR = Path(__file__).resolve().parent / "static"
RECENT = 50  # improvements and closed regressions listed on the regressions page


@dataclass(frozen=True)
class MachineView:
    """One machine's latest figures and the verdict of every claim on it."""

    machine: Machine
    commit: Commit | None
    has_gpu: bool
    subjects: list[SubjectFigures]
    verdicts: dict[str, Verdict]  # claim id -> verdict


def _visible(value: object) -> object:
    # what a template prints; a macro's output (Markup) was made visible piece by piece inside it
    return visible(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def environment() -> Environment:
    """The Jinja2 environment: templates from reports/templates, autoescaped, strict, every text
    shown with its control and bidirectional-override characters made visible."""
    env = Environment(loader=PackageLoader("proofbench.reports", "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined,
                      finalize=_visible)
    env.filters.update(FILTERS)
    env.filters["limit_text"] = why.limit_text
    return env


def stored_claims(session: Session) -> tuple[list[Claim], list[tuple[str, str]]]:
    """The stored claims, and (id, why) of each that no claims file could hold (a NaN figure
    written by other means): those are listed, not judged, so one cannot take the report down."""
    claims, unreadable = [], []
    for r in session.scalars(select(ClaimRow).order_by(ClaimRow.subject, ClaimRow.id)):
        try:
            claims.append(Claim(id=r.id, subject=r.subject, variant=r.variant, source=r.source, quote=r.quote,
                                kind=r.kind, metric=r.metric, low=r.low, high=r.high, device=r.device, note=r.note))
        except DeclarationError as exc:
            unreadable.append((r.id, str(exc)))
    return claims, unreadable


def machine_views(session: Session, claims: list[Claim]) -> list[MachineView]:
    """The figures of every machine with results at its latest commit."""
    views = []
    for machine in machines(session):
        newest = latest(session, machine.id)
        commit_id = newest.id if newest is not None else None
        subjects = figures(session, machine, commit_id)
        by_key = {(s.subject, s.size): s for s in subjects}
        gpu = has_gpu(machine)
        verdicts = {c.id: judge(c, largest(by_key, c.subject), gpu) for c in claims}
        views.append(MachineView(machine, session.get(Commit, commit_id) if commit_id else None, gpu,
                                 subjects, verdicts))
    return views


@dataclass(frozen=True)
class Site:
    """Everything the pages show, read from the database in one session."""

    generated: str
    columns: list[MachineColumn]
    claims: list[Claim]
    unreadable_claims: list[tuple[str, str]]  # (id, why) of stored claims not judged
    subjects: list[SubjectPage]
    notes: list[ChangeNote]
    rows: list[matrix.Row]
    ledger: list[matrix.LedgerRow]
    commits: list[Commit]
    order: tuple[str, ...]  # what ordered the commits (proofbench.db.commits.BASES)
    hardware: list[tuple[str, list[str]]]
    check: changes.CheckInfo | None  # the nightly check whose alerts are shown (None: found on the fly)
    profiles: dict[tuple[str, int, str], why.ProfileView]  # (subject, machine id, size) -> view
    loose_profiles: dict[str, list[why.ProfileView]]  # by subject: at a size or machine without results
    calibrations: list[tuple[str, list[str]]]  # machines page rows, one text per column
    plain: list[plain.PlainPage]  # the plain asv benchmarks' pages
    pipelines: dict[tuple[str, int, str], pipelines.PipelineView]  # (subject, machine id, size) -> whole vs parts


def _columns(session: Session, history: queries.History, claims: list[Claim],
             found: list[Machine]) -> list[MachineColumn]:
    names = labels(found)
    out = []
    for machine in found:
        mine = [s for s in history.series if s.machine_id == machine.id]
        newest = max((s.last_rank for s in mine + history.plain if s.machine_id == machine.id), default=None)
        commit = history.commit(newest) if newest is not None else None
        run = queries.run_info(session, machine.id, {commit.id}).get(commit.id) if commit else None
        latest = queries.latest_figures(session, machine, mine, history.commits)
        envs = sorted({s.environment_id for s in mine})
        apart = {e: queries.latest_figures(session, machine, mine, history.commits, e) for e in envs} \
            if len(envs) > 1 else {}  # a subject page shows each environment's own newest run
        out.append(column(machine, names[machine.id], latest, claims, commit, run, apart))
    return out


def _change_points(session: Session, history: queries.History, machine_ids: set[int]):
    """Stored alerts when a nightly check has run, else detection started in the background."""
    found = changes.stored(session, {c.id: i for i, c in enumerate(history.commits)})
    check, by_key = found if found is not None else (None, None)
    return check, changes.Changes(detectable(history, machine_ids) + plain.detectable(history, machine_ids), by_key)


@dataclass(frozen=True)
class _Read:
    """What one database session hands over; `steps.result()` waits for the change points."""

    claims: list[Claim]
    unreadable_claims: list[tuple[str, str]]
    history: queries.History
    columns: list[MachineColumn]
    environments: dict[int, str]
    check: changes.CheckInfo | None
    steps: changes.Changes
    profiles: list[VariantProfileRow]
    calibrations: list[CalibrationRow]
    pipelines: dict[tuple[str, int, str], pipelines.PipelineView]


def read(session: Session) -> _Read:
    """Every database read of a render, in one session (change points start first, so that
    on the fly they are found in worker processes while the rest is read)."""
    claims, unreadable = stored_claims(session)
    history = queries.history(session)
    found = machines(session)
    check, steps = _change_points(session, history, {m.id for m in found})
    try:
        columns = _columns(session, history, claims, found)
        environments = {e.id: e.name for e in session.scalars(select(EnvironmentRow))}
        ids = {m.id for m in found}
        profiled = latest_profiles(session, ids), calibrations(session, ids)
        wholes = pipelines.views(session, history, columns)
    except BaseException:
        steps.close()
        raise
    return _Read(claims, unreadable, history, columns, environments, check, steps, *profiled, wholes)


def assemble(data: _Read, writer: SiteWriter) -> Site:
    """Shape what was read into the pages' models (no database needed)."""
    claims, history, columns = data.claims, data.history, data.columns
    subject_names = {s.benchmark.subject for s in history.series} | {c.subject for c in claims}
    pages = {name: writer.page_name("subjects", name) for name in sorted(subject_names)}
    steps = data.steps.result()
    subjects, notes = build(history, {c.machine.id: c for c in columns}, claims, pages.__getitem__,
                            data.environments, steps)
    benchmarks, plain_notes = plain.build(history, {c.machine.id: c for c in columns},
                                          lambda name: writer.page_name("benchmarks", name), data.environments, steps)
    built = {page.subject: page.page for page in subjects}  # only pages that will exist are linked
    by_machine = {c.machine.id: c for c in columns}
    views = why.views(data.profiles, data.calibrations,
                           lambda machine, subject, size: by_machine[machine].figures.get((subject, size)), writer)
    return Site(generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), columns=columns,
                claims=claims, unreadable_claims=data.unreadable_claims, subjects=subjects, notes=notes + plain_notes,
                rows=matrix.rows(columns, claims, built), ledger=matrix.ledger(columns, claims, built),
                commits=history.commits, order=basis(history.commits),
                hardware=profile_rows([c.machine for c in columns]), check=data.check,
                profiles=views,
                loose_profiles=why.loose(views, subjects),
                calibrations=why.calibration_rows([c.machine.id for c in columns], data.calibrations),
                plain=benchmarks,
                pipelines=data.pipelines)


def _regressions(notes: list[ChangeNote]) -> dict[str, list[ChangeNote]]:
    newest = sorted(notes, key=lambda n: (-n.step.rank, n.subject, n.machine, n.variant))
    decided = [n for n in newest if not n.step.weak and not n.step.suspected]
    return {"open": [n for n in decided if n.step.open],
            "suspected": [n for n in newest if n.step.suspected],
            "closed": [n for n in decided if n.step.regression and not n.step.open][:RECENT],
            "improvements": [n for n in decided if not n.step.regression][:RECENT],
            "weak": [n for n in newest if n.step.weak][:RECENT]}


def render(engine: Engine, out_dir: Path) -> Path:
    """Write the site into `out_dir` (and nowhere else); returns the index page's path."""
    writer = SiteWriter(Path(out_dir))
    env = environment()
    with Session(engine) as session:
        data = read(session)
    try:
        site = assemble(data, writer)
    finally:
        data.steps.close()
    common = {"site": site, "root": ""}
    by_commit: dict[int, list[ChangeNote]] = defaultdict(list)
    for note in site.notes:
        by_commit[note.commit.id].append(note)
    regressions = _regressions(site.notes)
    writer.copy_static(STATIC_DIR)
    areas = matrix.by_area(site.rows)
    index = writer.write("index.html", env.get_template("index.html").render(
        **common, page="index", areas=areas, open_regressions=len(regressions["open"]),
        modules=plain.by_module(site.plain)))
    writer.write("claims.html", env.get_template("claims.html").render(
        **common, page="claims", tally=matrix.tally(site.ledger)))
    writer.write("machines.html", env.get_template("machines.html").render(**common, page="machines", areas=areas))
    writer.write("regressions.html", env.get_template("regressions.html").render(
        **common, page="regressions", lists=regressions, recent=RECENT, scan_alpha=DEFAULT.scan_alpha))
    writer.write("commits.html", env.get_template("commits.html").render(
        **common, page="commits", by_commit=by_commit))
    template = env.get_template("subject.html")
    for subject in site.subjects:
        writer.write(subject.page, template.render(site=site, root="../", page="subject", subject=subject))
    template = env.get_template("benchmark.html")
    for page in site.plain:
        writer.write(page.page, template.render(site=site, root="../", page="benchmark", b=page))
    return index
