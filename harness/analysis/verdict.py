"""Verdicts: each claim set beside what was measured, in one word and one reason.

reproduced       the measured figure reaches the promised one (and, for speed, the
                 difference is significant by Mann-Whitney U)
partly           significantly better than the baseline, but short of the promise
not reproduced   no better than the baseline, or worse
equivalence failed  the variant changed the answer beyond its stated tolerance
skipped          the variant cannot run here (the reason says why)
failed           the variant crashed, hung or ran out of memory (the reason says which)
not measurable here  the claim is about hardware this machine lacks, or nothing measures it
inconclusive     too few samples to decide
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from proofbench.analysis.comparison import SubjectFigures
from proofbench.claim import Claim

LABELS = ("reproduced", "partly", "not reproduced", "equivalence failed", "skipped", "failed",
          "not measurable here", "inconclusive")
MIN_REDUCTION = 0.05  # a memory difference under 5% is within run-to-run variation here


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict: the label, the measured figure (and interval) and why."""

    label: str
    kind: str  # the claim's kind, so the figure can be formatted
    value: float | None = None
    low: float | None = None
    high: float | None = None
    reason: str = ""


def judge(claim: Claim, figures: SubjectFigures | None, has_gpu: bool) -> Verdict:
    """The verdict of `claim` on one machine's figures (None: the subject was not measured)."""
    if figures is None:
        return Verdict("not measurable here", claim.kind, reason="no result for this subject on this machine")
    variant = figures.variant(claim.variant)
    if variant is None:
        return Verdict("not measurable here", claim.kind, reason=f"variant {claim.variant!r} was not measured")
    if variant.status != "ok":
        return Verdict(variant.status, claim.kind, reason=variant.reason)
    if variant.equivalent is False:
        return Verdict("equivalence failed", claim.kind, value=variant.quality,
                       reason=f"{figures.equivalence.get('metric', 'distance')} {variant.quality:.6g} "
                              f"outside tolerance {figures.equivalence.get('tolerance')}")
    verdict = _measured(claim, figures)
    if claim.device == "gpu" and not has_gpu and verdict.label not in ("skipped", "failed"):
        return Verdict("not measurable here", claim.kind, verdict.value, verdict.low, verdict.high,
                       "the claim is about GPUs and this machine has none; the CPU figure is shown")
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
        return Verdict("inconclusive", claim.kind, reason="no equivalence result")
    return Verdict("reproduced", claim.kind, value=variant.quality, reason="within the stated tolerance")


def _speedup(claim: Claim, figures: SubjectFigures) -> Verdict:
    s = figures.variant(claim.variant).speedup
    if s is None or math.isnan(s.estimate):
        return Verdict("inconclusive", claim.kind, reason="no timing samples")
    make = lambda label, why: Verdict(label, claim.kind, s.estimate, s.low, s.high, why)  # noqa: E731
    if not s.enough_samples:
        return make("inconclusive", f"too few samples ({s.n_baseline} and {s.n_variant})")
    if s.significant and s.estimate >= claim.low:
        return make("reproduced", f"p={s.p_value:.2g}")
    if s.significant and s.estimate > 1:
        return make("partly", f"faster (p={s.p_value:.2g}) but below the promised {claim.low:g}x")
    return make("not reproduced", f"{s.word} (p={s.p_value:.2g})")


def _throughput(claim: Claim, figures: SubjectFigures) -> Verdict:
    variant, base = figures.variant(claim.variant), figures.baseline
    rate = variant.items_per_second
    if rate is None:
        return Verdict("inconclusive", claim.kind, reason="no items/s figure")
    if rate >= claim.low:
        return Verdict("reproduced", claim.kind, rate, reason=f"{figures.item}s/s")
    faster = variant.speedup is not None and variant.speedup.significant and variant.speedup.estimate > 1
    label = "partly" if faster else "not reproduced"
    base_rate = base.items_per_second if base else None
    why = f"baseline {base_rate:.4g} {figures.item}s/s" if base_rate else ""
    return Verdict(label, claim.kind, rate, reason=why)


def _reduction(claim: Claim, figures: SubjectFigures) -> Verdict:
    reduction = figures.reduction(claim.variant, claim.metric)
    if reduction is None or math.isnan(reduction.fraction):
        return Verdict("inconclusive", claim.kind, reason=f"no {claim.metric} figure for both variants")
    fraction = reduction.fraction
    if fraction >= claim.low:
        label = "reproduced"
    elif fraction >= MIN_REDUCTION:
        label = "partly"
    else:
        label = "not reproduced"
    return Verdict(label, claim.kind, fraction,
                   reason=f"{claim.metric}: {reduction.baseline:.4g} -> {reduction.variant:.4g}")
