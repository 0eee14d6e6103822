"""Measuring commits again, on demand: the nightly check's confirmation, bisection and the pull-request gate.

A round measures each commit once, in one `asv run` of the history environment (`pipeline.history`:
the commit is built and installed, the suite of the working tree runs against it) into a results
directory of its own, so rounds never merge. Commits alternate inside a round and the order
turns round by round (A B, B A, A B ...), so drift and bursts of load from other processes fall
on both sides alike; the round is the unit of the statistic (`proofbench.stats.round_ratio`).
A timing's value in a round is its run level (`proofbench.run_level.run_level`), as the history's
series are read for change points, so a bisection compares like with like.

What is measured is a list of series (benchmark name and parameter values); asv is asked for
exactly those (`--bench` with the names asv prints for a parameter set). Building a commit runs
the repository's own build command: only the repository the user pointed proofbench at is built,
never anything named by a results file.
"""
from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from proofbench import git
from proofbench.errors import InputError, RunError
from proofbench.machine.capture import MachineProfile
from proofbench.pipeline import history, labels, results_file
from proofbench.pipeline.asv import Layout
from proofbench.profile import Profile
from proofbench.run_level import run_level


@dataclass(frozen=True)
class Target:
    """One series to measure: an asv benchmark name and its parameter values (asv's order)."""

    benchmark: str
    params: tuple[str, ...]

    @classmethod
    def of(cls, benchmark: str, key: str) -> Target:
        """The target of a stored series: its benchmark and parameters key (a JSON list)."""
        return cls(benchmark, tuple(str(v) for v in json.loads(key)))

    def pattern(self) -> str:
        """asv's --bench regex for exactly this benchmark and parameter set. asv names a
        parameter set by its values' reprs ('fast', 100); results keep a string without its
        quotes, so each value matches either way."""
        if not self.params:
            return "^" + re.escape(self.benchmark) + "$"
        shown = ", ".join(f"(?:{re.escape(p)}|'{re.escape(p)}'|\"{re.escape(p)}\")" for p in self.params)
        return "^" + re.escape(self.benchmark) + r"\(" + shown + r"\)$"


@dataclass(frozen=True)
class Round:
    """One round: each commit's value per target (None where the commit failed or did not build)."""

    values: dict[str, dict[Target, float | None]]  # commit -> target -> value
    seconds: float


@dataclass(frozen=True)
class Remeasured:
    """Every round of an alternating re-measurement, and why it stopped."""

    commits: tuple[str, ...]
    rounds: tuple[Round, ...]
    stopped: str  # "rounds" (all done) or "budget" (the time budget ran out)

    def targets(self) -> list[Target]:
        """Every series some round has a value of, in a stable order (a parameter set asv was not
        asked to run is in its results with no value, and is left out)."""
        found = {t for r in self.rounds for values in r.values.values() for t, v in values.items() if v is not None}
        return sorted(found, key=lambda t: (t.benchmark, t.params))

    def series(self, commit: str, target: Target) -> list[float | None]:
        """One commit's value of one target, round by round."""
        return [r.values.get(commit, {}).get(target) for r in self.rounds]

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.rounds)


def measure_round(layout: Layout, repo: Path, branch: str, commits: Sequence[str], targets: Sequence[Target] | None,
                  profile: Profile, machine: MachineProfile, directory: Path, bench: str | None = None,
                  discovered: Path | None = None) -> Round:
    """Measure `commits` once each (in that order) for `targets` (None: every benchmark `bench`
    selects, all of them without it), into `directory`; asv's discoveries kept in `discovered`
    where it names a directory (`history.run`)."""
    started = time.monotonic()
    if directory.exists():
        shutil.rmtree(directory)
    here = replace(layout, results=directory / "results")
    if targets is not None:
        bench = "|".join(f"(?:{t.pattern()})" for t in targets)
    outcome = history.run(here, tuple(commits), profile, machine, repo=repo, branch=branch, bench=bench, rerun=True,
                          discovered=discovered)
    values: dict[str, dict[Target, float | None]] = {c: dict.fromkeys(targets or ()) for c in commits}
    for path in outcome.results:
        try:
            parsed = results_file.read(path)
        except InputError:
            continue  # a file asv could not finish: the round has no value for that commit
        for point in parsed.points:
            target = Target(point.benchmark, point.params)
            if parsed.commit in values and (targets is None or target in values[parsed.commit]):
                values[parsed.commit][target] = _level(point) if point.status == "ok" else None
    return Round(values, time.monotonic() - started)


def _level(point: results_file.Point) -> float:
    # a timing's run level (its samples' low tail, as the history's series are read); else its value
    return run_level(point.value, point.samples) if labels.asv_type(point.benchmark) == "time" else point.value


def alternate(layout: Layout, repo: Path, branch: str, commits: tuple[str, str], targets: Sequence[Target] | None,
              profile: Profile, machine: MachineProfile, *, rounds: int, budget: float | None = None,
              bench: str | None = None) -> Remeasured:
    """Measure two commits in `rounds` alternating rounds (A B, B A, ...), stopping early when the
    next round would not fit in `budget` seconds (a round is assumed to take as long as the slowest so far).
    Two rounds that start at the same commit share asv's discovery of the suite (`fresh_discovery`)."""
    if rounds < 1:
        raise InputError(f"rounds must be at least 1, got {rounds}")
    work = layout.workdir / "remeasure"
    discovered = fresh_discovery(work)
    done: list[Round] = []
    for i in range(rounds):
        slowest = max((r.seconds for r in done), default=0.0)
        if budget is not None and done and sum(r.seconds for r in done) + slowest > budget:
            return Remeasured(commits, tuple(done), "budget")
        order = commits if i % 2 == 0 else commits[::-1]
        done.append(measure_round(layout, repo, branch, order, targets, profile, machine,
                                  work / f"round-{i}", bench, discovered))
    return Remeasured(commits, tuple(done), "rounds")


def fresh_discovery(directory: Path) -> Path:
    """The directory under `directory` where the runs given it keep asv's discoveries of the suite,
    one per commit a run starts at (`proofbench.pipeline.discovery`), emptied: the suite is
    discovered as it is now."""
    path = directory / "discovered"
    shutil.rmtree(path, ignore_errors=True)
    return path


def between(repo: Path, branch: str, older: str, newer: str) -> list[str]:
    """The commits of `branch`'s first-parent history after `older` up to and including `newer`."""
    hashes = git.branch_history(repo, branch)
    if older not in hashes or newer not in hashes:
        raise RunError(f"{repo}: {older[:8]} or {newer[:8]} is not on {branch}'s first-parent history")
    return hashes[hashes.index(older) + 1: hashes.index(newer) + 1]


BISECT = "bisect"  # the work directory's folder of bisection rounds


@dataclass(frozen=True)
class Bench:
    """A repository's suite ready to measure commits again on this machine: what the nightly
    check's confirmation and bisection need (`pair`, `beside`). Its `beside` rounds that start at
    the same commit share asv's discovery of the suite, kept in `discovered` (`fresh_discovery`;
    None: each round discovers)."""

    layout: Layout
    repo: Path
    branch: str
    profile: Profile
    machine: MachineProfile
    discovered: Path | None = None

    @classmethod
    def fresh(cls, layout: Layout, repo: Path, branch: str, profile: Profile, machine: MachineProfile) -> Bench:
        """A Bench with no discovery of the suite kept yet (one folder a profile: the suite's
        sizes are the profile's, and two profiles' benches may measure in one check)."""
        return cls(layout, repo, branch, profile, machine, fresh_discovery(layout.workdir / BISECT / profile.name))

    def pair(self, targets: Sequence[Target], before: str, after: str, *, rounds: int,
             budget: float | None) -> Remeasured:
        """`before` and `after` in alternating rounds, for the series `targets` side by side."""
        return alternate(self.layout, self.repo, self.branch, (before, after), targets, self.profile,
                         self.machine, rounds=rounds, budget=budget)

    def beside(self, target: Target, commit: str, reference: str, label: str, *,
               reference_first: bool = False) -> tuple[float | None, float | None]:
        """`commit` and `reference` measured one after the other in one round, for one series:
        their values (None: failed or did not build). Whatever shifts the machine between rounds
        (another job, a clock) shifts both."""
        order = (reference, commit) if reference_first else (commit, reference)
        done = measure_round(self.layout, self.repo, self.branch, order, [target], self.profile, self.machine,
                             self.layout.workdir / BISECT / label, discovered=self.discovered)
        return done.values[commit][target], done.values[reference][target]
