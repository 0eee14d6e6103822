"""Where a check's report starts (`check --since`): a date, or a commit and those after it."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench import git
from proofbench.analysis import series as series_mod
from proofbench.analysis.series import CommitRef, Order
from proofbench.db.models import Commit
from proofbench.errors import InputError


@dataclass(frozen=True)
class Since:
    """The first rank in commit order a check reports (None: nothing qualifies)."""

    text: str
    rank: int | None

    def shows(self, commit: CommitRef | None) -> bool:
        """Whether the report starting here shows what starts at `commit` (None: a commit off the
        order checked, which no report shows)."""
        return commit is not None and self.rank is not None and commit.rank >= self.rank


def first_parent(repo: Path, branch: str) -> list[str]:
    """`branch`'s first-parent history in `repo`, oldest first (`git.branch_history`: an
    InputError for a shallow clone, which a check may instead run without: --no-git)."""
    try:
        return git.branch_history(repo, branch)
    except InputError as exc:
        raise InputError(f"{exc}; or check without the repository, --no-git") from None


def parse(session: Session, text: str, branch: str, repo: Path | None, order: Order | None = None) -> Since:
    """--since: an ISO date (commits committed that day or later) or a revision (that
    commit and the ones after it in commit order)."""
    order = order or series_mod.order(session, branch)
    day = _date(text)
    rows = session.execute(select(Commit.id, Commit.hash, Commit.committed_at, Commit.results_date)
                           .where(Commit.id.in_(list(order.commits)))).all()
    if day is not None:
        ranks = [order.commits[i].rank for i, _, at, asv in rows if (at or asv) is not None and utc(at or asv) >= day]
        return Since(text, min(ranks) if ranks else None)
    full = (git.rev_parse(repo, text) if repo else None) or text
    matches = [order.commits[i].rank for i, h, _, _ in rows if h.startswith(full.lower())]
    if len(matches) == 1:
        return Since(text, matches[0])
    if repo and "first-parent history" in order.basis and full in (hashes := first_parent(repo, branch)):
        return Since(text, hashes.index(full))
    raise InputError(f"--since {text!r}: not a date (YYYY-MM-DD) nor a commit with results on {branch}"
                     + (" (ambiguous prefix)" if len(matches) > 1 else ""))


def _date(text: str) -> dt.datetime | None:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return utc(value)


def utc(value: dt.datetime) -> dt.datetime:
    """`value` in UTC: SQLite hands timestamps back without their zone (stored as UTC or local git time)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
