"""Renders the static HTML site from the database with Jinja2 (autoescape on)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from db.models import ClaimRow, Commit, Machine
from harness.claim import Claim
from harness.comparison import SubjectFigures, figures, latest_commit, machines
from harness.verdict import Verdict, judge
from reports.formatting import FILTERS

SITE_DIR = Path(__file__).resolve().parent / "site"


@dataclass(frozen=True)
class MachineView:
    """One machine's latest figures and the verdict of every claim on it."""

    machine: Machine
    commit: Commit | None
    has_gpu: bool
    subjects: list[SubjectFigures]
    verdicts: dict[str, Verdict]  # claim id -> verdict


def environment() -> Environment:
    """The Jinja2 environment: templates from reports/templates, autoescaped, strict."""
    env = Environment(loader=PackageLoader("reports", "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    return env


def _claims(session: Session) -> list[Claim]:
    rows = session.scalars(select(ClaimRow).order_by(ClaimRow.subject, ClaimRow.id))
    return [Claim(id=r.id, subject=r.subject, variant=r.variant, source=r.source, quote=r.quote, kind=r.kind,
                  metric=r.metric, low=r.low, high=r.high, device=r.device, note=r.note) for r in rows]


def _has_gpu(machine: Machine) -> bool:
    return bool((machine.profile or {}).get("gpus"))


def _pick(subjects: list[SubjectFigures], claim: Claim) -> SubjectFigures | None:
    # A claim is judged on the largest size measured: the one nearest real use.
    order = {"tiny": 0, "small": 1, "large": 2}
    mine = [s for s in subjects if s.subject == claim.subject]
    return max(mine, key=lambda s: order.get(s.size, -1)) if mine else None


def machine_views(session: Session, claims: list[Claim]) -> list[MachineView]:
    """The latest figures of every machine with results."""
    views = []
    for machine in machines(session):
        commit_id = latest_commit(session, machine.id)
        subjects = figures(session, machine, commit_id)
        has_gpu = _has_gpu(machine)
        verdicts = {c.id: judge(c, _pick(subjects, c), has_gpu) for c in claims}
        views.append(MachineView(machine, session.get(Commit, commit_id) if commit_id else None, has_gpu,
                                 subjects, verdicts))
    return views


def render(engine: Engine, out_dir: Path = SITE_DIR) -> Path:
    """Write the site into `out_dir` (and nowhere else); returns the index page's path."""
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    with Session(engine) as session:
        claims = _claims(session)
        views = machine_views(session, claims)
        page = env.get_template("index.html").render(
            views=views, claims=claims, claims_by_subject=_by_subject(claims),
            generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    index = out_dir / "index.html"
    index.write_text(page)
    return index


def _by_subject(claims: list[Claim]) -> dict[str, list[Claim]]:
    out: dict[str, list[Claim]] = {}
    for claim in claims:
        out.setdefault(claim.subject, []).append(claim)
    return out
