"""A variant against its baseline: the plan, the two sides, the checks of what the timed calls
returned, and the document the sidecar carries to the database. The rounds are measured in the
benchmark process, or shared among the plan's `processes`, each forked from it and preparing its
own workload (`measure`; see `proofbench.measure.processes` and `proofbench.variation` for why).

The checks use the answers of the timed calls themselves (as MLPerf's TEST01 samples responses
during a performance run), never extra calls made apart: each side's warm-up answer and the last
answer of its block in the first and the last round. The baseline is compared with itself (its
warm-up answer against its later ones): a baseline that disagrees with itself beyond the
tolerance makes the comparison "baseline not deterministic" instead of a failed equivalence. A
variant's answers are compared with the baseline's warm-up answer. A variant that declares a
kept state (`proofbench.declare.State`) has it probed before its first and last blocks: the
readings must agree.

The document (version `DOCUMENT_VERSION`), in the sidecar record's `rounds` field:

    {"version": 1,
     "plan": {"budget", "precision", "min_rounds", "block", "max_rounds", "heavy", "processes",
              "warmup", "between_runs", "no_difference", "span"},
     "rounds": [{"a": [calls, seconds, load], "b": [...], "first": "a" | "b", "process": 0}, ...],
     "checks": {"baseline": [[round, value], ...], "variant": [[round, value], ...],
                "states": [[round, "reading"], ...]},
     "seconds": wall seconds of the rounds}

Side a is the baseline, side b the variant; `load` is other processes' CPU in cores (null where
unreadable); `process` numbers the process that measured the round (0 where one did); round -1 is
a process's warm-up call, other rounds are numbered across processes; `value` is the subject's
equivalence metric.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any, Callable

from proofbench.declare import Subject, Variant, Workload
from proofbench.measure import processes
from proofbench.measure.interleave import Measured, Plan, Sampled, Side, alternate
from proofbench.profile import Profile
from proofbench.rounds import Round
from proofbench.stats import paired

DOCUMENT_VERSION = 1
# Other processes' load, in cores, beyond the cores the run leaves free, that makes a round heavy:
# one more core than those means the measured process shares its own cores. A steady lighter
# load is kept: it hits both sides of a round alike (measured: 1.4-1.6 cores of other load on 2
# cores moved paired speedups by under 5%, separate processes' by up to 2x).
HEAVY_MARGIN = 1.0


def plan(profile: Profile, subject: str, cores: int | None = None, bound: str = "compute") -> Plan:
    """The plan of one variant's rounds under `profile`: its budget and variation between runs
    for `subject`, rounds left out as heavy when other processes take more than the cores the
    run leaves free, and, for a data-bound subject (`bound` "data"), rounds that span the
    profile's `data_span` share of the budget."""
    spare = max(0, (cores or os.cpu_count() or 1) - profile.torch_threads)
    budget = profile.budget(subject)
    return Plan(budget=budget, precision=profile.precision, min_rounds=profile.min_rounds,
                block=profile.block_seconds, heavy=spare + HEAVY_MARGIN, processes=profile.processes,
                warmup=profile.pair_warmup, between_runs=profile.between(subject),
                no_difference=profile.no_difference, span=budget * profile.data_span if bound == "data" else 0.0)


def measure(subject: Subject, variant: Variant, prepare: Callable[[], Workload], plan_: Plan,
            fork: bool = True) -> tuple[Measured, Checked]:
    """`variant` against the baseline by `plan_`, with the answers of the timed calls checked.

    In one process, on the workload `prepare` returns; in `plan_.processes` processes (forked
    where `fork`, see `proofbench.measure.processes`), each preparing its own and measuring its
    part of the plan, their rounds numbered by process and their checks put together.
    """
    def one(part: Plan) -> tuple[Measured, Checked]:
        inputs = prepare().inputs
        measured = alternate(side(subject.variant("baseline"), inputs), side(variant, inputs), part)
        return measured, check(subject, variant, measured)

    if plan_.processes == 1:
        return one(plan_)
    part = plan_.part()
    return merged(processes.each(lambda _: _bare(*one(part)), plan_.processes, fork))


def _bare(measured: Measured, checked: Checked) -> tuple[Measured, Checked]:
    # what a child passes back: its rounds and checks, not the answers themselves
    return Measured(measured.rounds, Sampled(()), Sampled(()), measured.seconds), checked


def merged(parts: list[tuple[Measured, Checked]]) -> tuple[Measured, Checked]:
    """The parts measured by several processes as one: rounds tagged with their process and
    numbered on, the checks' rounds numbered alike (the warm-up stays -1), outcomes all passed."""
    rounds: list[Round] = []
    baseline: list[tuple[int, float]] = []
    answers: list[tuple[int, float]] = []
    states: list[tuple[int, str]] = []
    for process, (measured, checked) in enumerate(parts):
        offset = len(rounds)

        def moved(rows: tuple, offset: int = offset) -> list:
            return [(i + offset if i >= 0 else i, value) for i, value in rows]

        rounds.extend(replace(r, process=process) for r in measured.rounds)
        baseline += moved(checked.baseline)
        answers += moved(checked.variant)
        states += moved(checked.states)
    checks = [c for _, c in parts]
    deterministic = all(c.deterministic for c in checks)
    equivalent = all(bool(c.equivalent) for c in checks) if deterministic else None
    kept = [c.state_kept for c in checks if c.state_kept is not None]
    seconds = sum(m.seconds for m, _ in parts)
    return (Measured(tuple(rounds), Sampled(()), Sampled(()), seconds),
            Checked(tuple(baseline), tuple(answers), tuple(states), deterministic, equivalent,
                    all(kept) if kept else None))


def asv_value(measured: Measured, plan_: Plan) -> float:
    """What asv keeps for a pair: the estimate over the rounds kept, else over all rounds (asv
    reads NaN as "skipped"); the verdict is derived from the stored rounds, never from this."""
    kept = plan_.judged(measured.rounds)
    return kept.estimate if math.isfinite(kept.estimate) else paired(measured.rounds).estimate


def side(variant: Variant, inputs: Any) -> Side:
    """A variant as one side of a pair, with its declared reset and state probe."""
    state = variant.state
    before = (lambda: state.reset(inputs)) if state is not None and state.reset is not None else None
    probe = (lambda: state.probe(inputs)) if state is not None else None
    return Side(lambda: variant.run(inputs), before, probe)


@dataclass(frozen=True)
class Checked:
    """The checks of one pair's answers: (round, metric value) of the baseline against its own
    warm-up answer and of the variant against it, the variant's state readings, and the outcome.
    `equivalent` is None where the baseline was not deterministic; `state_kept` None where the
    variant declares no state."""

    baseline: tuple[tuple[int, float], ...]
    variant: tuple[tuple[int, float], ...]
    states: tuple[tuple[int, str], ...]
    deterministic: bool
    equivalent: bool | None
    state_kept: bool | None

    @property
    def passed(self) -> bool:
        return self.deterministic and bool(self.equivalent) and self.state_kept is not False


def worst(values: list[float], higher_is_better: bool) -> float:
    """The value furthest on the wrong side of a metric (NaN, which never passes, first)."""
    if any(math.isnan(v) for v in values) or not values:
        return math.nan
    return min(values) if higher_is_better else max(values)


def check(subject: Subject, variant: Variant, measured: Measured) -> Checked:
    """Compare the sampled answers of `variant` (side b) and the baseline (side a); see the module
    docstring."""
    equivalence = subject.equivalence
    (_, reference), *later = measured.a.outputs
    baseline = tuple((i, float(equivalence.compare(reference, out))) for i, out in later)
    answers = tuple((i, float(equivalence.compare(reference, out))) for i, out in measured.b.outputs)
    states = tuple((i, repr(reading)) for i, reading in measured.b.states)
    deterministic = all(equivalence.passes(v) for _, v in baseline)
    equivalent = all(equivalence.passes(v) for _, v in answers) if deterministic else None
    state_kept = len({r for _, r in states}) <= 1 if variant.state is not None else None
    return Checked(baseline, answers, states, deterministic, equivalent, state_kept)


def document(plan_: Plan, measured: Measured, checked: Checked) -> dict:
    """The raw record of one pair, as the sidecar and the database keep it."""
    return {"version": DOCUMENT_VERSION, "plan": plan_.to_dict(),
            "rounds": [r.to_dict() for r in measured.rounds],
            "checks": {"baseline": [list(x) for x in checked.baseline], "variant": [list(x) for x in checked.variant],
                       "states": [list(x) for x in checked.states]},
            "seconds": measured.seconds}


def failure(subject: Subject, checked: Checked) -> str:
    """The sidecar's reason when a check failed (empty when all passed)."""
    metric = subject.equivalence.metric
    if not checked.deterministic:
        value = worst([v for _, v in checked.baseline], metric.higher_is_better)
        return f"baseline not deterministic: {metric.name}={value:.6g} between its own answers"
    if not checked.equivalent:
        value = worst([v for _, v in checked.variant], metric.higher_is_better)
        return f"equivalence failed: {metric.name}={value:.6g}, tolerance {subject.equivalence.tolerance:g}"
    if checked.state_kept is False:
        return "state moved between timed calls: " + ", ".join(r for _, r in checked.states)
    return ""
