"""Hardware comparison: the same subjects measured on two machines, side by side.

For each subject and size: every variant's speedup over its baseline on machine A and on
machine B (as `proofbench.analysis.comparison` derives it on each machine), and the absolute throughput
ratio between the machines: items/s of the same variant at the same size on A over B. The
ratio is `proofbench.stats.speedup` applied to the two machines' raw time samples, B's as the
reference (a Hodges-Lehmann estimate and its 95% interval), that interval widened by how much
each side's runs move (`proofbench.analysis.across_runs`: measured over its history of that
benchmark, else assumed); above 1, A does more items per second. Both sides do the same work
(same subject, variant, size and item count) or no ratio is given, and the reason is kept.

Figures come from one commit given for both machines, or each machine's latest commit.

Plain asv benchmarks (any suite's) are compared at one commit: the one given, else the newest
commit both machines measured. For every benchmark and parameter combination measured on both,
the two values (asv's, per commit) and their ratio A/B are given; below 1 the value is lower on
A (for a time or a memory: A is better). An empty comparison (no commit in common, no benchmark
measured on both) is an InputError that says which.

`compare_devices` puts one machine's results of two devices side by side (a CPU profile's
against a CUDA profile's, each at its newest commit unless one is given) in the same shape:
side A is the first device, side B the second, and the ratio is items/s on A over B.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from proofbench import git, parameters
from proofbench.analysis.across_runs import ASSUMED, AcrossRuns, RunToRun, across_runs, run_to_run
from proofbench.analysis.comparison import SubjectFigures, VariantFigures, figures, machines
from proofbench.db.commits import aware, latest, ordered
from proofbench.db.models import Benchmark, Commit, Machine, Result
from proofbench.errors import InputError
from proofbench.profile import Profile
from proofbench.stats import speedup


@dataclass(frozen=True)
class MachineSide:
    """One machine of a comparison as stored: name, fingerprint, hardware, and the commit shown."""

    name: str
    fingerprint: str
    commit: str
    commit_subject: str
    cpu: str
    logical_cores: int | None
    gpu: str  # "none", or the GPU names ("NVIDIA H100 80GB HBM3", "2x NVIDIA A100 ...")
    gpu_note: str | None  # why there is no GPU ("NVML not available: ..."), when the profile says
    torch: str | None
    cuda: str | None
    device: str | None = None  # one machine's devices compared: the device of this side's profiles


@dataclass(frozen=True)
class VariantPair:
    """One variant at one size on both machines; `ratio` is items/s on A over items/s on B."""

    variant: str
    a: VariantFigures | None
    b: VariantFigures | None
    ratio: AcrossRuns | None
    note: str  # why there is no ratio; empty when there is one


@dataclass(frozen=True)
class SubjectPair:
    """One subject at one size, measured on A, on B, or on both."""

    subject: str
    area: str
    item: str
    size: str
    description: str
    variants: tuple[VariantPair, ...]


@dataclass(frozen=True)
class PlainPair:
    """One plain asv benchmark at one parameter combination on both machines, at one commit."""

    benchmark: str
    params: dict
    unit: str
    a: float | None  # None: failed or skipped there (`note` says which)
    b: float | None
    note: str

    @property
    def ratio(self) -> float | None:
        """A's value over B's (0.8: 20% lower on A)."""
        return self.a / self.b if self.a is not None and self.b else None


@dataclass(frozen=True)
class HardwareComparison:
    """Machine A against machine B, subject by subject, and plain benchmark by benchmark
    at `plain_commit` (the hash; empty without plain benchmarks)."""

    a: MachineSide
    b: MachineSide
    subjects: tuple[SubjectPair, ...]
    plain: tuple[PlainPair, ...] = ()
    plain_commit: str = ""

    @property
    def same_commit(self) -> bool:
        return self.a.commit == self.b.commit

    @property
    def same_hardware(self) -> bool:
        """Two machine names with one hardware fingerprint (not one machine's two devices)."""
        return self.a.fingerprint == self.b.fingerprint and not self.a.device


def resolve_machine(session: Session, spec: str) -> Machine:
    """The machine called `spec` (the fingerprint with its newest result), or `NAME@FINGERPRINT`."""
    known = machines(session)
    named = [m for m in known if m.name == spec]
    if not named and "@" in spec:
        name, prefix = spec.rsplit("@", 1)
        named = [m for m in known if m.name == name and prefix and m.fingerprint.startswith(prefix)]
    if named:  # the fingerprint measured last: hardware may also change back to an earlier one
        return max(named, key=lambda m: session.scalar(select(func.max(Result.id)).where(Result.machine_id == m.id)))
    listed = ", ".join(sorted({m.name for m in known})) or "none"
    raise InputError(f"machine {spec!r}: no results stored for it (machines with results: {listed})")


def resolve_commit(session: Session, rev: str, repo: Path | None = None) -> Commit:
    """The stored commit whose hash starts with `rev`, or that `git rev-parse rev` names in `repo`."""
    matches = _commits_starting(session, rev.lower())
    if not matches and repo is not None:
        full = git.rev_parse(repo, rev)
        matches = _commits_starting(session, full) if full else []
    if len(matches) > 1:
        raise InputError(f"commit {rev!r} is ambiguous: it matches {', '.join(c.hash[:12] for c in matches)}")
    if not matches:
        raise InputError(f"commit {rev!r}: no results stored at it (give a hash prefix or a git revision)")
    return matches[0]


def _commits_starting(session: Session, prefix: str) -> list[Commit]:
    if not prefix:
        return []
    return list(session.scalars(select(Commit).where(Commit.hash.startswith(prefix, autoescape=True))))


def compare(session: Session, a: str, b: str, rev: str | None = None, repo: Path | None = None) -> HardwareComparison:
    """Machine `a` against machine `b` at commit `rev`, or at each machine's latest commit
    (plain benchmarks: at the newest commit both measured); InputError saying why when there
    is nothing to compare."""
    machine_a, machine_b = resolve_machine(session, a), resolve_machine(session, b)
    commit = resolve_commit(session, rev, repo) if rev else None
    commits, sets, moves = [], [], []
    for machine in (machine_a, machine_b):
        newest = latest(session, machine.id)
        commit_id = commit.id if commit is not None else (newest.id if newest is not None else None)
        commits.append(session.get(Commit, commit_id) if commit_id is not None else None)
        sets.append(figures(session, machine, commit_id))
        moves.append(_run_to_run(session, machine, commit_id))
    pairs = _pairs(*sets, *moves) if sets[0] and sets[1] else ()
    at = commit or _common_commit(session, machine_a, machine_b)
    plain = _plain_pairs(session, machine_a, machine_b, at) if at is not None else ()
    if not pairs and not plain:
        raise InputError(_why_empty(session, machine_a, machine_b, commit, at))
    if not pairs:
        commits = [at, at]
    return HardwareComparison(_side(machine_a, commits[0]), _side(machine_b, commits[1]), pairs, plain,
                              at.hash if plain else "")


def compare_devices(session: Session, spec: str, devices: tuple[str, str], known: Mapping[str, Profile],
                    rev: str | None = None, repo: Path | None = None) -> HardwareComparison:
    """Machine `spec`'s results of the profiles on `devices[0]` (A) against those on `devices[1]`
    (B); `known` are the run profiles by name. InputError saying which device has no results."""
    if len(set(devices)) != 2:
        raise InputError(f"--devices: give two different devices, got {' '.join(devices)}")
    machine = resolve_machine(session, spec)
    commit = resolve_commit(session, rev, repo) if rev else None
    sides, sets, moves = [], [], []
    for device in devices:
        names = sorted(name for name, p in known.items() if p.device == device)
        at = commit or latest(session, machine.id, names)
        found = figures(session, machine, at.id, profiles=names) if at is not None else []
        if not found:
            raise InputError(_why_no_device(machine, device, names, commit))
        sides.append(replace(_side(machine, at), device=device))
        sets.append(found)
        moves.append(_run_to_run(session, machine, at.id, names))
    return HardwareComparison(sides[0], sides[1], _pairs(*sets, *moves))


_Moves = dict[tuple[str, str, str], RunToRun]  # (subject, size, variant) -> how much its runs move


def _pairs(a: list[SubjectFigures], b: list[SubjectFigures], moves_a: _Moves, moves_b: _Moves
           ) -> tuple[SubjectPair, ...]:
    """Side A's and side B's figures of each subject and size either side measured, by area."""
    sets = [{(f.subject, f.size): f for f in found} for found in (a, b)]
    keys = sorted(set(sets[0]) | set(sets[1]), key=lambda k: (_either(sets, k).area, k))
    return tuple(_subject_pair(sets[0].get(k), sets[1].get(k), moves_a, moves_b) for k in keys)


def _run_to_run(session: Session, machine: Machine, commit_id: int | None,
                profiles: list[str] | None = None) -> _Moves:
    """How much each subject's variant's runs move on `machine` from one sitting to the next: its
    time per call over every run stored there in the environment and profile of the result that
    `figures` shows at `commit_id` (of several environments, the one stored last)."""
    query = (select(Result.value, Result.started_at, Result.params, Result.profile, Result.environment_id,
                    Result.commit_id, Benchmark.subject)
             .join(Benchmark, Result.benchmark_id == Benchmark.id)
             .where(Result.machine_id == machine.id, Result.status == "ok", Benchmark.kind == "subject",
                    Benchmark.name.endswith(".time_call")))
    if profiles is not None:
        query = query.where(Result.profile.in_(profiles))
    runs: dict[tuple, list] = {}
    compared: dict[tuple, tuple] = {}
    for value, started, params, profile, env, commit, subject in session.execute(query):
        key = (subject, params.get("size", ""), params.get("variant", ""))
        runs.setdefault((key, profile, env), []).append((aware(started), value))
        if commit == commit_id and env >= compared.get(key, (None, -1))[1]:
            compared[key] = (profile, env)
    return {key: run_to_run(runs[(key, *shown)]) for key, shown in compared.items()}


def _why_no_device(machine: Machine, device: str, names: list[str], commit: Commit | None) -> str:
    at = f" at commit {commit.hash[:12]}" if commit is not None else ""
    if not names:
        return f"no {device} results on {machine.name!r}: no run profile has device {device}"
    return (f"no {device} results on {machine.name!r}{at} (profiles on {device}: {', '.join(names)}); "
            f"measure them there first, e.g. proofbench run --profile {names[0]}")


def _commits_of(session: Session, machine: Machine) -> set[int]:
    return set(session.scalars(select(Result.commit_id).where(Result.machine_id == machine.id).distinct()))


def _common_commit(session: Session, a: Machine, b: Machine) -> Commit | None:
    """The newest commit, in commit order, with results on both machines."""
    both = _commits_of(session, a) & _commits_of(session, b)
    return next((c for c in reversed(ordered(session)) if c.id in both), None)


def _plain_values(session: Session, machine: Machine, commit: Commit) -> dict[tuple[str, str], tuple]:
    rows = session.execute(select(Benchmark.name, Benchmark.unit, Result.params_key, Result.params, Result.status,
                                  Result.value, Result.reason)
                           .join(Benchmark, Result.benchmark_id == Benchmark.id)
                           .where(Result.machine_id == machine.id, Result.commit_id == commit.id,
                                  Benchmark.kind == "plain"))
    return {(name, key): (unit, params, status, value, reason)
            for name, unit, key, params, status, value, reason in rows}


def _plain_pairs(session: Session, a: Machine, b: Machine, commit: Commit) -> tuple[PlainPair, ...]:
    """Every plain benchmark and parameter combination measured on both machines at `commit`, by
    benchmark name, then its combinations in the report pages' order (`proofbench.parameters`)."""
    on_a, on_b = _plain_values(session, a, commit), _plain_values(session, b, commit)
    out = []
    for key in sorted(set(on_a) & set(on_b), key=lambda k: (k[0], parameters.order((on_a[k][1] or {}).values()), k)):
        (unit, params, *first), (_, _, *second) = on_a[key], on_b[key]
        values = [v if status == "ok" and v is not None and math.isfinite(v) else None for status, v, _ in
                  (first, second)]
        note = "; ".join(f"{status} on {side}" + (f": {reason}" if reason else "")
                         for side, (status, _, reason) in (("A", first), ("B", second)) if status != "ok")
        out.append(PlainPair(key[0], dict(params or {}), unit, values[0], values[1], note))
    return tuple(out)


def _why_empty(session: Session, a: Machine, b: Machine, commit: Commit | None, at: Commit | None) -> str:
    names = f"{a.name!r} and {b.name!r}"
    if commit is not None:
        missing = [m.name for m in (a, b) if commit.id not in _commits_of(session, m)]
        if missing:
            return f"nothing to compare: {' and '.join(repr(m) for m in missing)} has no results at commit " \
                   f"{commit.hash[:12]}"
        return f"nothing to compare: {names} measured no benchmark in common at commit {commit.hash[:12]}"
    if at is None:
        return (f"nothing to compare: {names} have no commit in common ({a.name!r}: "
                f"{len(_commits_of(session, a))} commit(s), {b.name!r}: {len(_commits_of(session, b))}); "
                f"pass --commit to pick one measured on both")
    return f"nothing to compare: {names} measured no benchmark in common (newest common commit {at.hash[:12]})"


def _either(sets: list[dict], key: tuple[str, str]) -> SubjectFigures:
    return sets[0].get(key) or sets[1][key]


def _side(machine: Machine, commit: Commit) -> MachineSide:
    # Profiles from `proofbench run`/`machine` are proofbench.machine.capture's; older rows hold asv's params.
    profile = machine.profile or {}
    gpus = profile.get("gpus")
    if isinstance(gpus, list):
        counts = Counter(g.get("name", "?") for g in sorted(gpus, key=lambda g: g.get("index", 0)))
        gpu = ", ".join(n if c == 1 else f"{c}x {n}" for n, c in counts.items()) or "none"
    else:
        gpu = str(profile.get("gpu") or "unknown")
    cores = profile.get("logical_cores", profile.get("num_cpu"))
    return MachineSide(name=machine.name, fingerprint=machine.fingerprint, commit=commit.hash,
                       commit_subject=commit.subject or "", cpu=str(profile.get("cpu_model") or profile.get("cpu")
                                                                    or "unknown"),
                       logical_cores=int(cores) if str(cores or "").isdigit() else None, gpu=gpu,
                       gpu_note=profile.get("gpu_note"), torch=profile.get("torch_version"),
                       cuda=profile.get("cuda_version"))


def _subject_pair(a: SubjectFigures | None, b: SubjectFigures | None, moves_a: _Moves, moves_b: _Moves
                  ) -> SubjectPair:
    first = a or b
    names = [v.variant for v in a.variants] if a else []
    names += [v.variant for v in b.variants if v.variant not in names] if b else []
    variants = []
    for name in names:
        va, vb = (a.variant(name) if a else None), (b.variant(name) if b else None)
        key = (first.subject, first.size, name)
        ratio, note = throughput_ratio(va, vb, moves_a.get(key, ASSUMED), moves_b.get(key, ASSUMED))
        variants.append(VariantPair(name, va, vb, ratio, note))
    return SubjectPair(subject=first.subject, area=first.area, item=first.item, size=first.size,
                       description=first.description, variants=tuple(variants))


def throughput_ratio(a: VariantFigures | None, b: VariantFigures | None, moves_a: RunToRun = ASSUMED,
                     moves_b: RunToRun = ASSUMED) -> tuple[AcrossRuns | None, str]:
    """Items/s on A over items/s on B from both time sample sets, with how much each side's runs
    move (`moves_a`, `moves_b`), or None and why not."""
    for label, side in (("A", a), ("B", b)):
        if side is None:
            return None, f"not measured on {label}"
        if side.status != "ok":
            return None, f"{side.status} on {label}" + (f": {side.reason}" if side.reason else "")
        if not side.samples:
            return None, f"no time samples on {label}"
    if a.items is not None and b.items is not None and a.items != b.items:
        return None, f"not the same work: {a.items:g} items per call on A, {b.items:g} on B"
    return across_runs(speedup(b.samples, a.samples), moves_a, moves_b), ""
