"""Comparisons: each variant of a subject against its baseline, derived from stored samples.

This is what the terminal table, the report and `proofbench compare` show. Nothing here is
stored: every figure is derived from the raw samples and values in the database. A variant's
speedup comes from the rounds in which it alternated with its baseline (the `track_speedup`
row's `rounds` document, see `proofbench.measure.pairing`): `proofbench.stats.paired` over them,
and the checks of the answers the timed calls returned. Results stored before speedups were
measured in rounds show the separate processes' figure, which decides nothing.
"""
from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field, replace

from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.analysis.isa import IsaNote, isa_note
from proofbench.db.commits import latest
from proofbench.db.models import Benchmark, Commit, Machine, Result
from proofbench.declare import within_tolerance
from proofbench.measure.gpu_watch import GpuConditions
from proofbench.measure.pairing import worst
from proofbench.rounds import Round
from proofbench.stats import Paired, Reduction, Spread, paired, process_groups, speedup, spread, unpaired
from proofbench.variation import Between, pooled


@dataclass(frozen=True)
class VariantFigures:
    """Everything measured for one variant at one size, on one machine and commit."""

    variant: str
    status: str  # ok | failed | skipped
    reason: str
    time: Spread | None
    samples: tuple[float, ...]
    items: float | None
    speedup: Paired | None
    peak_memory: float | None
    quality: float | None
    equivalent: bool | None
    measures: dict[str, float] = field(default_factory=dict)
    other_load_cores: float | None = None
    busy: bool | None = None
    threads: int | None = None
    deterministic: bool | None = None  # False: the baseline disagreed with itself in the rounds
    state_kept: bool | None = None  # False: a declared kept state moved between timed calls
    isa: IsaNote | None = None  # a bf16 or int8 variant: the CPU features its speed depends on
    gpu: GpuConditions | None = None  # a CUDA run watched through NVML: throttling, other processes

    @property
    def items_per_second(self) -> float | None:
        if self.items is None or self.time is None or not self.time.median:
            return None
        return self.items / self.time.median

    @property
    def noisy(self) -> bool:
        return self.time is not None and self.time.noisy


@dataclass(frozen=True)
class SubjectFigures:
    """One subject at one size on one machine and commit: its variants, baseline first."""

    machine: str
    commit: str
    subject: str
    area: str
    item: str
    size: str
    description: str
    equivalence: dict
    variants: tuple[VariantFigures, ...]
    rates: tuple[str, ...] = ()
    units: dict[str, str] = field(default_factory=dict)

    def variant(self, name: str) -> VariantFigures | None:
        return next((v for v in self.variants if v.variant == name), None)

    @property
    def baseline(self) -> VariantFigures | None:
        return self.variant("baseline")

    def reduction(self, variant: str, metric: str) -> Reduction | None:
        """The variant's reduction of `metric` (peak_memory or a measure) against the baseline."""
        base, other = self.baseline, self.variant(variant)
        if base is None or other is None:
            return None
        b, v = _metric(base, metric), _metric(other, metric)
        return None if b is None or v is None else Reduction(b, v)


def _metric(figures: VariantFigures, metric: str) -> float | None:
    if metric == "peak_memory":
        return figures.peak_memory
    if metric == "items":
        return figures.items_per_second
    return figures.measures.get(metric)


def machines(session: Session) -> list[Machine]:
    """Machines that have results, newest profile of each name last."""
    ids = select(Result.machine_id).distinct()
    return list(session.scalars(select(Machine).where(Machine.id.in_(ids)).order_by(Machine.name, Machine.id)))


def figures(session: Session, machine: Machine, commit_id: int | None = None,
            profiles: Collection[str] | None = None, environment_id: int | None = None) -> list[SubjectFigures]:
    """Every subject and size measured on `machine` at `commit_id` (default: its latest), of the
    run profiles named in `profiles` only when given (a CPU profile's results apart from a CUDA one's),
    and of one asv environment: `environment_id`, else of each subject and size the one stored last."""
    if commit_id is None:
        newest = latest(session, machine.id)
        if newest is None:
            return []
        commit_id = newest.id
    commit = session.get(Commit, commit_id)
    query = (select(Result, Benchmark).join(Benchmark, Result.benchmark_id == Benchmark.id)
             .where(Result.machine_id == machine.id, Result.commit_id == commit_id,
                    Benchmark.kind == "subject"))  # plain asv benchmarks have no variants
    if profiles is not None:
        query = query.where(Result.profile.in_(list(profiles)))
    if environment_id is not None:
        query = query.where(Result.environment_id == environment_id)
    rows = _one_environment(session.execute(query).all())
    grouped: dict[tuple[str, str], dict[str, list[tuple[Result, Benchmark]]]] = {}
    for result, bench in rows:
        size = result.params.get("size", "")
        grouped.setdefault((bench.subject, size), {}).setdefault(result.params.get("variant", ""), []).append(
            (result, bench))
    between = pooled_between(rows)
    out = [_subject_figures(machine, commit.hash, key, by_variant, between) for key, by_variant in grouped.items()]
    return sorted(out, key=lambda f: (f.area, f.subject, f.size))


def _one_environment(rows: Collection[tuple[Result, Benchmark]]) -> list[tuple[Result, Benchmark]]:
    """Of each subject and size measured in several asv environments at one commit (a matrix of two
    torch versions, say), the rows of the one stored last: one figure never mixes environments."""
    kept: dict[tuple[str | None, str], int] = {}
    for result, bench in rows:
        key = (bench.subject, result.params.get("size", ""))
        kept[key] = max(kept.get(key, result.environment_id), result.environment_id)
    return [(r, b) for r, b in rows if kept[(b.subject, r.params.get("size", ""))] == r.environment_id]


def pooled_between(rows: Collection[tuple[Result, Benchmark]]) -> dict[str | None, Between | None]:
    """Per run profile, the variation between processes pooled over the speedups among `rows`
    (one machine and commit) that were measured in several processes (`proofbench.variation`)."""
    by_profile: dict[str | None, list] = {}
    for result, bench in rows:
        if bench.name.endswith(".track_speedup") and result.rounds:
            heavy = result.rounds.get("plan", {}).get("heavy")
            by_profile.setdefault(result.profile, []).append(process_groups(_rounds(result), heavy))
    return {profile: pooled(groups) for profile, groups in by_profile.items()}


def _rounds(result: Result) -> list[Round]:
    # a speedup's stored rounds (`proofbench.measure.pairing.document`)
    return [Round.from_dict(r) for r in result.rounds.get("rounds", ())]


def _subject_figures(machine: Machine, commit: str, key: tuple[str, str], by_variant: dict,
                     between: dict[str | None, Between | None]) -> SubjectFigures:
    subject, size = key
    any_bench = next(iter(by_variant.values()))[0][1]
    details = any_bench.details or {}
    order = list(details.get("variants", {})) or sorted(by_variant)
    declared = details.get("variants", {})
    variants = [replace(_variant_figures(name, by_variant[name], between),
                        isa=isa_note(declared.get(name, {}).get("requires", ()), machine.profile))
                for name in order if name in by_variant]
    base = next((v for v in variants if v.variant == "baseline"), None)
    if base is not None:
        # Items per call belong to the workload and are recorded once, with the baseline.
        variants = [_derived(v, base) for v in variants]
    units = {bench.metric: bench.unit for rows in by_variant.values() for _, bench in rows}
    return SubjectFigures(machine=machine.name, commit=commit, subject=subject, area=any_bench.area,
                          item=any_bench.item, size=size, description=details.get("description", ""),
                          equivalence=details.get("equivalence", {}), variants=tuple(variants),
                          rates=tuple(details.get("rates", ())), units=units)


def _derived(v: VariantFigures, base: VariantFigures) -> VariantFigures:
    changes: dict = {}
    if v.items is None:
        changes["items"] = base.items
    if v.variant != "baseline" and v.speedup is None and v.samples and base.samples:
        changes["speedup"] = unpaired(speedup(base.samples, v.samples))
    return VariantFigures(**{**v.__dict__, **changes}) if changes else v


def _variant_figures(name: str, rows: list[tuple[Result, Benchmark]],
                     between: dict[str | None, Between | None]) -> VariantFigures:
    by_metric = {bench.metric: result for result, bench in rows}
    timing = next((r for r, b in rows if b.name.endswith(".time_call")), None)
    quality = next((r for r, b in rows if b.name.endswith(".track_quality")), None)
    pair = next(((r, b) for r, b in rows if b.name.endswith(".track_speedup") and r.rounds), None)
    status, reason = _status(rows, timing)
    samples = tuple(timing.samples or ()) if timing is not None and timing.status == "ok" else ()
    measures = {m: _ok(r) for m, r in by_metric.items() if m not in ("time", "items", "peak_memory", "speedup")
                and r is not quality and _ok(r) is not None}
    figures = VariantFigures(
        variant=name, status=status, reason=reason, time=spread(samples) if samples else None, samples=samples,
        items=_ok(by_metric.get("items")), speedup=None, peak_memory=_ok(by_metric.get("peak_memory")),
        quality=_ok(quality), equivalent=quality.equivalent if quality is not None else None, measures=measures,
        other_load_cores=timing.other_load_cores if timing is not None else None,
        busy=timing.busy if timing is not None else None, threads=timing.threads if timing is not None else None,
        gpu=GpuConditions.of(r.gpu for r, b in rows if b.name.endswith((".time_call", ".track_speedup"))))
    return _with_rounds(figures, *pair, between.get(pair[0].profile)) if pair is not None else figures


def _with_rounds(figures: VariantFigures, result: Result, bench: Benchmark, between: Between | None) -> VariantFigures:
    # The speedup and the equivalence of the answers, from the stored rounds and checks.
    document = result.rounds
    plan = document.get("plan", {})
    summary = paired(_rounds(result), plan.get("precision", 0.05), plan.get("min_rounds", 3), plan.get("heavy"),
                     between=between, between_runs=plan.get("between_runs", 0.0),
                     no_difference=plan.get("no_difference", 0.0))
    spec = (bench.details or {}).get("equivalence", {})
    checks = document.get("checks", {})

    def passing(key: str) -> tuple[bool | None, list[float]]:
        values = [float(v) for _, v in checks.get(key, ())]
        if not values or "tolerance" not in spec:
            return None, values
        return all(within_tolerance(v, spec["tolerance"], spec.get("higher_is_better", False)) for v in values), values

    deterministic, _ = passing("baseline")
    equivalent, values = passing("variant")
    states = {str(r) for _, r in checks.get("states", ())}
    return replace(figures, speedup=summary, deterministic=deterministic,
                   equivalent=None if deterministic is False else equivalent,
                   quality=worst(values, bool(spec.get("higher_is_better"))) if values else figures.quality,
                   state_kept=(len(states) <= 1) if checks.get("states") else None,
                   other_load_cores=summary.load_b if summary.load_b is not None else figures.other_load_cores,
                   threads=result.threads or figures.threads)


def _status(rows: list[tuple[Result, Benchmark]], timing: Result | None) -> tuple[str, str]:
    # The timing result decides; a failure anywhere else is still reported.
    if timing is not None and timing.status != "ok":
        return timing.status, timing.reason
    failed = [r for r, _ in rows if r.status == "failed"]
    if failed:
        return "failed", failed[0].reason
    return ("ok", "") if timing is not None else ("failed", "no timing result")


def _ok(result: Result | None) -> float | None:
    if result is None or result.status != "ok" or result.value is None or math.isnan(result.value):
        return None
    return float(result.value)
