"""A variant against its baseline in one benchmark process: the plan, the two sides, the checks
of what the timed calls returned, and the document the sidecar carries to the database.

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
     "plan": {"budget", "precision", "min_rounds", "block", "max_rounds", "heavy"},
     "rounds": [{"a": [calls, seconds, load], "b": [...], "first": "a" | "b", "process": 0}, ...],
     "checks": {"baseline": [[round, value], ...], "variant": [[round, value], ...],
                "states": [[round, "reading"], ...]},
     "seconds": wall seconds of the rounds}

Side a is the baseline, side b the variant; `load` is other processes' CPU in cores (null where
unreadable); round -1 is the warm-up call; `value` is the subject's equivalence metric.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from proofbench.declare import Subject, Variant
from proofbench.measure.interleave import Measured, Plan, Side
from proofbench.profile import Profile
from proofbench.stats import paired

DOCUMENT_VERSION = 1
# Other processes' load, in cores, beyond the cores the run leaves free, that makes a round heavy:
# one more core than those means the measured process shares its own cores. A steady lighter
# load is kept: it hits both sides of a round alike (measured: 1.4-1.6 cores of other load on 2
# cores moved paired speedups by under 5%, separate processes' by up to 2x).
HEAVY_MARGIN = 1.0


def plan(profile: Profile, subject: str, cores: int | None = None) -> Plan:
    """The plan of one variant's rounds under `profile`: its budget for `subject`, and rounds
    left out as heavy when other processes take more than the cores the run leaves free."""
    spare = max(0, (cores or os.cpu_count() or 1) - profile.torch_threads)
    return Plan(budget=profile.budget(subject), precision=profile.precision, min_rounds=profile.min_rounds,
                block=profile.block_seconds, heavy=spare + HEAVY_MARGIN)


def asv_value(measured: Measured, plan_: Plan) -> float:
    """What asv keeps for a pair: the estimate over the rounds kept, else over all rounds (asv
    reads NaN as "skipped"); the verdict is derived from the stored rounds, never from this."""
    kept = paired(measured.rounds, plan_.precision, plan_.min_rounds, plan_.heavy)
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
