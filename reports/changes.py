"""Change points of every history, for the charts and the regressions page.

Where the nightly check (proofbench.analysis.check) has run, its stored alerts are the change
points: they never move, and each is open until a later step brings the level back. Where it has
not, `proofbench.analysis.detect.detect` runs over each series' per-commit values here (steps of at
least the check's default floor, `MIN_STEP`), in worker processes started as soon as the histories
are read, while the rest of the site is assembled; a regression found that way is open until the
newest level is back past the step's middle (the check's own rule, `brought_back`). A weak step
(found by the detector's sensitive pass only) is marked and listed apart, never open."""
from __future__ import annotations

import datetime as dt
import math
import multiprocessing
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Hashable, Protocol, Sequence

from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from proofbench.analysis.check import brought_back
from proofbench.analysis.detect import MIN_STEP, detect
from proofbench.db.alerts import Alert, CheckRun
from proofbench.reports import check as check_words
from proofbench.reports.alerts import answer_words

PARALLEL_MIN_POINTS = 20_000  # below this many points in all, worker processes cost more than they save


@dataclass(frozen=True)
class Step:
    """One change point of one series, in commit ranks (indexes into History.commits)."""

    rank: int
    previous_rank: int
    before: float
    after: float
    p_value: float
    regression: bool
    open: bool
    note: str = ""  # a stored alert's re-measurement, bisection and answer, in words
    weak: bool = False  # found by the detector's sensitive pass only: shown, never open
    suspected: bool = False  # a stored alert the check suspects, not confirmed yet: shown, never open

    @property
    def mark(self) -> str:
        """How the chart marks it: regression, improvement, or weak (either way; a suspected
        step too: not alerted)."""
        return "weak" if self.weak or self.suspected else "regression" if self.regression else "improvement"

    @property
    def change(self) -> float:
        """Relative change of the value: +0.25 for 25% higher."""
        return self.after / self.before - 1.0 if self.before else math.inf


class SeriesLike(Protocol):
    """What `Changes` needs of a series (reports.queries.Series has it)."""

    key: tuple
    ranks: Sequence[int]
    values: Sequence[float]
    benchmark: object


@dataclass(frozen=True)
class Job:
    """One series to examine: its commit ranks, values (NaN or None: failed) and direction."""

    ranks: Sequence[int]
    values: Sequence[float | None]
    higher_is_better: bool


def _one(job: Job) -> list[Step]:
    finite = [v for v in job.values if v is not None and math.isfinite(v)]
    if len(finite) < 5 or max(finite) == min(finite):
        return []  # too short, or a constant: nothing can step
    found = detect(list(job.values), higher_is_better=job.higher_is_better, min_step=MIN_STEP)
    latest = found[-1].after if found else math.nan
    steps = []
    for cp in found:
        kept = not brought_back(cp.before, cp.after, latest)
        steps.append(Step(job.ranks[cp.index], job.ranks[max(cp.index - 1, 0)], cp.before, cp.after,
                          getattr(cp, "p_value", math.nan), cp.regression, cp.regression and kept and not cp.weak,
                          weak=cp.weak))
    return steps


def _chunk(jobs: list[Job]) -> list[list[Step]]:
    return [_one(job) for job in jobs]


class Detection:
    """Change points of many series, found in worker processes while the caller goes on.

    With few points in all (or one CPU) the work is done in this process when `result` is
    called. Each worker gets every n-th job, so long and short series spread evenly.
    """

    def __init__(self, jobs: list[Job]) -> None:
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future] = []
        workers = min(os.cpu_count() or 1, 8)
        if workers > 1 and sum(len(j.values) for j in jobs) >= PARALLEL_MIN_POINTS:
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else None)
            self._pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_start)
            self._futures = [self._pool.submit(_chunk, jobs[w::workers]) for w in range(workers)]

    def result(self) -> list[list[Step]]:
        """The steps of each job, in job order."""
        if self._pool is None:
            return _chunk(self.jobs)
        out: list[list[Step]] = [[] for _ in self.jobs]
        workers = len(self._futures)
        try:
            for w, future in enumerate(self._futures):
                for j, steps in enumerate(future.result()):
                    out[w + j * workers] = steps
        finally:
            self.close()
        return out

    def close(self) -> None:
        """Stop the workers (also when the caller gave up before asking for the result)."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


class Changes:
    """The change points of some series, under keys the caller chooses.

    From `stored` alerts (by series key) when given, else found by `Detection`, which starts at
    once; `result` waits for it. `close` releases the workers if the result is never needed.
    """

    def __init__(self, keyed: list[tuple[Hashable, SeriesLike]], stored: dict[tuple, list[Step]] | None) -> None:
        self._keys = [key for key, _ in keyed]
        self._ready = None if stored is None else {key: stored.get(s.key, []) for key, s in keyed}
        self._detection = None if stored is not None else Detection(
            [Job(s.ranks, s.values, s.benchmark.higher_is_better) for _, s in keyed])

    def result(self) -> dict[Hashable, list[Step]]:
        """The steps of every series by its key (waits for detection)."""
        if self._ready is None:
            self._ready = dict(zip(self._keys, self._detection.result()))
        return self._ready

    def close(self) -> None:
        """Release detection's workers; harmless after `result`."""
        if self._detection is not None:
            self._detection.close()


@dataclass(frozen=True)
class CheckInfo:
    """The nightly check whose alerts the report shows."""

    id: int
    started_at: dt.datetime | None
    branch: str


def _note(a: Alert) -> str:
    ratio = a.after / a.before if a.before > 0 and a.after > 0 else math.nan
    shown = check_words.estimated(a.step, ratio)
    return "; ".join(([shown] if shown else []) +
                     check_words.note_lines(a.confirmation, a.culprit, a.bisection, answer_words(a)))


def stored(session: Session, rank: dict[int, int]) -> tuple[CheckInfo, dict[tuple, list[Step]]] | None:
    """The stored alerts as steps by series key (machine, environment, benchmark, params key),
    with the newest check; None when no check has been recorded in this database."""
    if not inspect(session.connection()).has_table(CheckRun.__tablename__):
        return None
    last = session.scalars(select(CheckRun).order_by(CheckRun.id.desc()).limit(1)).first()
    if last is None:
        return None
    steps: dict[tuple, list[Step]] = {}
    for a in session.scalars(select(Alert).where(Alert.status.in_(("open", "resolved", "suspected")))
                             .order_by(Alert.id)):
        if a.commit_id not in rank:  # (dropped steps are the check's business, not a chart's)
            continue
        here = rank[a.commit_id]
        previous = rank.get(a.previous_commit_id, max(here - 1, 0))
        steps.setdefault((a.machine_id, a.environment_id, a.benchmark_id, a.params_key), []).append(
            Step(here, previous, a.before, a.after, a.p_value, a.regression, a.regression and a.status == "open",
                 _note(a), suspected=a.status == "suspected"))
    for found in steps.values():
        found.sort(key=lambda s: s.rank)
    return CheckInfo(last.id, last.started_at, last.branch), steps


def _worker_start() -> None:
    # a forked worker ends on SIGTERM as a process does, without a traceback: it inherits the
    # command's handler, which turns SIGTERM into an interrupt for the command itself
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
