"""What a nightly check reports: each alert as that check saw it (`Finding`) and the whole
report (`CheckReport`, with the exit status it makes). Made by `proofbench.analysis.check`, shown
by `proofbench.reports.check`."""
from __future__ import annotations

import math
from dataclasses import dataclass

from proofbench.analysis.series import CommitRef


@dataclass(frozen=True)
class Finding:
    """One alert as this check reports it. `state`: new (raised by this check, or confirmed by
    it), suspected (not decided yet), open (raised earlier, not resolved), dropped (by this
    check's re-measurement, or a suspect its history no longer shows) or resolved (by this
    check). `confirmation`: the stored re-measurement (`confirm.stored`); `culprit`,
    `bisection`: what bisecting found; `answer`: the standing ack or accept (action, by, at, note)."""

    id: int | None
    state: str
    regression: bool
    machine: str
    environment: str
    benchmark: str
    subject: str
    metric: str
    unit: str
    higher_is_better: bool
    params: dict
    commit: CommitRef
    previous: CommitRef | None
    before: float
    after: float
    p_value: float
    score: float
    first_check: int | None
    first_reported_at: str
    resolved_at: CommitRef | None
    confirmation: dict | None = None
    culprit: CommitRef | None = None
    bisection: dict | None = None
    answer: dict | None = None
    step: float | None = None  # the step as estimated, signed: what min_step is held against (`Alert.step`)
    version: str = ""  # asv's version of the benchmark: a new one (its code changed) is a series of its own
    resolved_after: CommitRef | None = None  # the commit before the range the level came back in

    @property
    def ratio(self) -> float:
        """after / before (1.25 = 25% higher)."""
        return self.after / self.before if self.before else math.inf

    @property
    def kind(self) -> str:
        return "regression" if self.regression else "improvement"


@dataclass(frozen=True)
class CheckReport:
    """What one check found; `recorded` is False for a check that stored nothing."""

    check_id: int | None
    at: str
    branch: str
    since: str | None
    previous_check: tuple[int, str] | None
    series: int
    placed: int
    findings: tuple[Finding, ...]
    fail_on: str
    recorded: bool
    order: tuple[str, ...] = ()  # what ordered the commits (proofbench.db.commits.BASES)
    unchecked: int = 0  # series with no result at a commit of that order (`series.outside`)
    unmatched_rules: tuple[str, ...] = ()  # patterns of the project file's rules no series matched
    commits_off: int = 0  # commits with results off that order (`series.commits_outside`): not checked

    def count(self, state: str, regression: bool) -> int:
        return sum(1 for f in self.findings if f.state == state and f.regression == regression)

    @property
    def exit_code(self) -> int:
        """1 when a regression nobody answered is found (new ones, or open ones with
        fail_on='open'), else 0."""
        states = ("new",) if self.fail_on == "new" else ("new", "open")
        return 1 if any(f.regression and f.state in states and f.answer is None for f in self.findings) else 0
