"""The one module that talks to git: history order, revisions and commit metadata.

Every value that came from a file or a user reaches git as data, never as an option: hashes are
checked to be hexadecimal first, and revisions go after `--end-of-options`.
"""
from __future__ import annotations

import datetime as dt
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from proofbench.errors import InputError

TIMEOUT = 60.0  # seconds any one git command may take
HASH = re.compile(r"[0-9a-f]{7,64}")  # a commit hash as stored: SHA-1 or SHA-256, full or abbreviated


@dataclass(frozen=True)
class CommitInfo:
    """What a commit says of itself."""

    hash: str
    subject: str
    author: str
    authored_at: dt.datetime
    committed_at: dt.datetime


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise InputError(f"{repo}: git {args[0]} took longer than {TIMEOUT:g} s") from None
    except OSError as exc:
        raise InputError(f"{repo}: cannot run git: {exc.strerror}") from None


def _reason(out: subprocess.CompletedProcess) -> str:
    return (out.stderr.strip().splitlines() or ["git failed"])[-1]


def is_hash(text: str) -> bool:
    """True when `text` is a (possibly abbreviated) lowercase hexadecimal commit hash."""
    return isinstance(text, str) and HASH.fullmatch(text) is not None


def head(repo: Path) -> str:
    """The full hash of HEAD; InputError when `repo` is not a git checkout with a commit."""
    out = _git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if out.returncode != 0:
        raise InputError(f"{repo}: not a git checkout with a commit (asv stores results per commit)")
    return out.stdout.strip()


def rev_parse(repo: Path, rev: str) -> str | None:
    """The full hash `rev` names in `repo`, or None when it names no commit there."""
    out = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    return out.stdout.strip() if out.returncode == 0 else None


def merge_base(repo: Path, a: str, b: str) -> str:
    """The best common ancestor of revisions `a` and `b`."""
    out = _git(repo, "merge-base", "--end-of-options", a, b)
    if out.returncode != 0:
        raise InputError(f"{repo}: {a!r} and {b!r} have no common ancestor ({_reason(out)})")
    return out.stdout.strip()


def first_parent(repo: Path, tip: str, since: str | None = None) -> list[str]:
    """Full hashes of `tip`'s first-parent history (or of a range `A..B`), oldest first,
    committed at or after `since` when given."""
    args = ["rev-list", "--first-parent", "--reverse"] + ([f"--since={since}"] if since else [])
    out = _git(repo, *args, "--end-of-options", tip, "--")
    if out.returncode != 0:
        raise InputError(f"{repo}: cannot list the first-parent history of {tip!r}: {_reason(out)}")
    return out.stdout.split()


def branch_history(repo: Path, branch: str) -> list[str]:
    """`branch`'s whole first-parent history, oldest first, by which commits are placed; an
    InputError for a shallow clone, whose history stops short: its oldest commit would be placed
    first, and every commit before it nowhere."""
    if is_shallow(repo):
        raise InputError(f"{repo}: a shallow clone cannot place commits on {branch}'s first-parent history (fetch "
                         f"the full history: git fetch --unshallow, or fetch-depth: 0 in a CI checkout)")
    return first_parent(repo, branch)


def date_read(repo: Path, since: str) -> dt.datetime | None:
    """The moment git reads `since` as (its --since takes nearly any text: one it cannot read is
    now), in UTC; None where git gives none."""
    out = _git(repo, "rev-parse", f"--since={since}")
    found = re.fullmatch(r"--max-age=(\d+)", out.stdout.strip()) if out.returncode == 0 else None
    return dt.datetime.fromtimestamp(int(found.group(1)), dt.UTC) if found else None


def current_branch(repo: Path) -> str | None:
    """The branch checked out in `repo`, or None on a detached HEAD."""
    out = _git(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    return out.stdout.strip() or None if out.returncode == 0 else None


def is_shallow(repo: Path) -> bool:
    """True for a shallow clone, whose history stops before the root commit."""
    return _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"


def commit_info(repo: Path, commit: str) -> CommitInfo | None:
    """Subject line, author and dates of `commit`, or None when `repo` does not have it.

    `commit` must be a hexadecimal hash (it comes from results files): anything else is
    refused before git sees it.
    """
    if not is_hash(commit):
        raise InputError(f"commit {commit[:80]!r}: not a commit hash (expected 7-64 hexadecimal digits)")
    out = _git(repo, "show", "-s", "--format=%H%x00%s%x00%an%x00%aI%x00%cI", "--end-of-options", commit, "--")
    if out.returncode != 0 or out.stdout.count("\x00") < 4:
        return None
    full, subject, author, authored, committed = out.stdout.strip("\n").split("\x00")[:5]
    return CommitInfo(full, subject, author, dt.datetime.fromisoformat(authored), dt.datetime.fromisoformat(committed))


def user_name(repo: Path) -> str | None:
    """git's user.name as `repo` sees it, or None where none is set."""
    out = _git(repo, "config", "user.name")
    return out.stdout.strip() or None if out.returncode == 0 else None
