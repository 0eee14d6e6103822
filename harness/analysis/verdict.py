"""Verdicts: each claim set beside what was measured, in one word and one reason.

reproduced       the measured figure reaches the promised one (and, for speed, the paired
                 rounds say "faster": the interval lies above 1 and is within the precision;
                 or, wider than the precision, its whole interval lies above the promise: a
                 subject that moves more between runs than the precision allows still
                 reaches it whichever way the next run goes)
partly           faster than the baseline, but short of the promise
not reproduced   no significant difference from the baseline, or slower; or a speedup too
                 close to 1 for a word (`stats.Why` BORDERLINE, NOT_NEGLIGIBLE, UNDECIDED), or
                 too noisy (TOO_NOISY) and not clear of 1, whose whole interval lies below the
                 promise: whichever word a next run decides, the promise is out of its reach
equivalence failed  the variant changed the answer beyond its stated tolerance
baseline not deterministic  the baseline's own answers disagreed beyond the tolerance, so
                 equivalence cannot be judged
skipped          the variant cannot run here (the reason says why)
failed           the variant crashed, hung or ran out of memory, or broke its declared state
not measurable here  the claim is about hardware this machine lacks, or nothing measures it
not measured     nothing of the subject or of its variant was measured on this machine (a run
                 of some subjects only): not that it cannot be
inconclusive     the measurement cannot decide: too few rounds, too noisy, unequal load, or a
                 speedup from separate processes (the reason is `detail`, a `stats.Why`); or a
                 speed or rate measured while the GPU throttled or another process used it,
                 which is not this machine's own speed (the same rule as unequal CPU load)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from proofbench.analysis.comparison import SubjectFigures
from proofbench.analysis.isa import IsaNote
from proofbench.claim import Claim
from proofbench.stats import NEAR_ONE, Difference
from proofbench.stats import Why as Outcome

MIN_REDUCTION = 0.05  # a memory difference under 5% is within run-to-run variation here


class Why(StrEnum):
    """Why a verdict is what it is; `proofbench.reports.formatting.verdict_reason` puts it in words."""

    NOT_MEASURED = "no result for this subject on this machine"
    VARIANT_NOT_MEASURED = "the variant was not measured"
    RUN_STATUS = "the run's own reason"  # skipped or failed: `detail` holds what the run recorded
    OUTSIDE_TOLERANCE = "the answer moved beyond the tolerance"
    NOT_DETERMINISTIC = "the baseline's answers disagreed beyond the tolerance"
    STATE_MOVED = "the declared kept state moved between timed calls"
    GPU_CLAIM = "a GPU claim on a machine without one"
    NO_SAMPLES = "no timing samples"
    UNDECIDED = "the measurement could not decide"  # `detail` holds the stats.Why
    SIGNIFICANT = "significant"
    SHORT_OF_PROMISE = "significant but short of the promise"
    NOT_BETTER = "no better than the baseline"
    BELOW_PROMISE = "too close to 1, or too noisy, for a word, and the whole interval below the promise"
    ABOVE_PROMISE = "wider than the precision, and the whole interval above the promise"
    WITHIN_PROMISE = "wider than the precision, and the whole interval between 1 and the promise"
    NO_RATE = "no items/s figure"
    RATE_REACHED = "the rate reaches the promise"
    RATE_SHORT = "the rate falls short"
    NO_FIGURE = "no figure for both variants"
    REDUCTION = "the reduction measured"
    NO_EQUIVALENCE = "no equivalence result"
    WITHIN_TOLERANCE = "within the stated tolerance"
    GPU_THROTTLED = "the GPU held its clocks down while measured"  # `detail`: the reasons, comma-separated
    GPU_SHARED = "another process used the GPU while measured"  # `detail`: their ids, comma-separated


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict: the label, the measured figure (and interval) and why, as data.

    `baseline`/`measured` are the two sides behind the figure where there are two (memory,
    items/s); `detail` is text from the data itself (a run's failure reason, a metric's name).
    """

    label: str
    kind: str  # the claim's kind, so the figure can be formatted
    why: Why
    value: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    rounds: tuple[int, int] | None = None  # (rounds kept, rounds measured) behind a speedup
    baseline: float | None = None
    measured: float | None = None
    promised: float | None = None
    tolerance: float | None = None
    detail: str = ""
    isa: IsaNote | None = None  # a bf16 or int8 variant: whether this CPU runs its dtype natively


def judge(claim: Claim, figures: SubjectFigures | None, has_gpu: bool) -> Verdict:
    """The verdict of `claim` on one machine's figures (None: the subject was not measured)."""
    if figures is None:
        return Verdict("not measured", claim.kind, Why.NOT_MEASURED)
    variant = figures.variant(claim.variant)
    if variant is None:
        return Verdict("not measured", claim.kind, Why.VARIANT_NOT_MEASURED, detail=claim.variant)
    if variant.status != "ok":
        return Verdict(variant.status, claim.kind, Why.RUN_STATUS, detail=variant.reason)
    if variant.deterministic is False:
        return Verdict("baseline not deterministic", claim.kind, Why.NOT_DETERMINISTIC,
                       tolerance=figures.equivalence.get("tolerance"),
                       detail=str(figures.equivalence.get("metric", "distance")))
    if variant.state_kept is False:
        return Verdict("failed", claim.kind, Why.STATE_MOVED)
    if variant.equivalent is False:
        return Verdict("equivalence failed", claim.kind, Why.OUTSIDE_TOLERANCE, value=variant.quality,
                       tolerance=figures.equivalence.get("tolerance"),
                       detail=str(figures.equivalence.get("metric", "distance")))
    verdict = replace(_measured(claim, figures), isa=variant.isa)
    if claim.device == "gpu" and not has_gpu and verdict.label not in ("skipped", "failed"):
        return replace(verdict, label="not measurable here", why=Why.GPU_CLAIM)
    return _gpu_watched(verdict, figures, claim.variant)


_SPEED_KINDS = ("speedup", "throughput")
_DECIDED = ("reproduced", "partly", "not reproduced")


def _gpu_watched(verdict: Verdict, figures: SubjectFigures, variant: str) -> Verdict:
    # A speed or rate decided while the GPU throttled, or was shared, is not this machine's:
    # the figure stays, the word becomes "inconclusive" with the reason (as for unequal CPU load).
    if verdict.kind not in _SPEED_KINDS or verdict.label not in _DECIDED:
        return verdict
    sides = [v.gpu for v in (figures.variant(variant), figures.baseline) if v is not None and v.gpu is not None]
    reasons = sorted({r for g in sides for r in g.throttle_reasons})
    if reasons:
        return replace(verdict, label="inconclusive", why=Why.GPU_THROTTLED, detail=", ".join(reasons))
    if any(g.shared for g in sides):
        pids = sorted({p for g in sides for p in g.other_pids})
        return replace(verdict, label="inconclusive", why=Why.GPU_SHARED, detail=", ".join(map(str, pids)))
    return verdict


def _measured(claim: Claim, figures: SubjectFigures) -> Verdict:
    if claim.kind == "speedup":
        return _speedup(claim, figures)
    if claim.kind == "throughput":
        return _throughput(claim, figures)
    if claim.kind == "memory_reduction":
        return _reduction(claim, figures)
    variant = figures.variant(claim.variant)
    if variant.equivalent is None:
        return Verdict("inconclusive", claim.kind, Why.NO_EQUIVALENCE)
    return Verdict("reproduced", claim.kind, Why.WITHIN_TOLERANCE, value=variant.quality)


def _speedup(claim: Claim, figures: SubjectFigures) -> Verdict:
    s = figures.variant(claim.variant).speedup
    if s is None or math.isnan(s.estimate):
        return Verdict("inconclusive", claim.kind, Why.NO_SAMPLES)

    def made(label: str, why: Why, detail: str) -> Verdict:
        return Verdict(label, claim.kind, why, s.estimate, s.low, s.high, p_value=s.p_value,
                       rounds=(s.kept, s.rounds), promised=claim.low, detail=detail)

    if s.difference == Difference.INCONCLUSIVE and s.why is Outcome.TOO_NOISY and s.low > max(
            claim.low, 1.0 + s.between_runs):  # clear of 1 by the margin a word needs, too
        return made("reproduced", Why.ABOVE_PROMISE, str(s.why))
    if s.difference == Difference.INCONCLUSIVE and s.why is Outcome.TOO_NOISY and \
            1.0 + s.between_runs < s.low and s.high < claim.low:  # faster, and short of it whatever the next run
        return made("partly", Why.WITHIN_PROMISE, str(s.why))
    if s.difference == Difference.INCONCLUSIVE and (s.why in NEAR_ONE or s.why is Outcome.TOO_NOISY) and \
            s.high < claim.low:  # not clearly faster, and the promise out of reach whatever the next run
        return made("not reproduced", Why.BELOW_PROMISE, str(s.why))
    if s.difference == Difference.INCONCLUSIVE:
        return made("inconclusive", Why.UNDECIDED, str(s.why))
    if s.difference == Difference.FASTER and s.estimate >= claim.low:
        return made("reproduced", Why.SIGNIFICANT, str(s.difference))
    if s.difference == Difference.FASTER:
        return made("partly", Why.SHORT_OF_PROMISE, str(s.difference))
    return made("not reproduced", Why.NOT_BETTER, str(s.difference))


def _throughput(claim: Claim, figures: SubjectFigures) -> Verdict:
    variant, base = figures.variant(claim.variant), figures.baseline
    rate = variant.items_per_second
    if rate is None:
        return Verdict("inconclusive", claim.kind, Why.NO_RATE)
    base_rate = base.items_per_second if base else None
    if rate >= claim.low:
        return Verdict("reproduced", claim.kind, Why.RATE_REACHED, rate, baseline=base_rate, promised=claim.low,
                       detail=figures.item)
    faster = variant.speedup is not None and variant.speedup.difference == Difference.FASTER
    return Verdict("partly" if faster else "not reproduced", claim.kind, Why.RATE_SHORT, rate, baseline=base_rate,
                   promised=claim.low, detail=figures.item)


def _reduction(claim: Claim, figures: SubjectFigures) -> Verdict:
    reduction = figures.reduction(claim.variant, claim.metric)
    if reduction is None or math.isnan(reduction.fraction):
        return Verdict("inconclusive", claim.kind, Why.NO_FIGURE, detail=claim.metric)
    fraction = reduction.fraction
    if fraction >= claim.low:
        label = "reproduced"
    elif fraction >= MIN_REDUCTION:
        label = "partly"
    else:
        label = "not reproduced"
    return Verdict(label, claim.kind, Why.REDUCTION, fraction, baseline=reduction.baseline,
                   measured=reduction.variant, promised=claim.low, detail=claim.metric)
