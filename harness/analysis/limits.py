"""How close a variant came to the machine's limit, and what its work cost in energy.

A compute-bound variant's operations per call (counted per dtype by `proofbench profile`)
over its time per call is set against the calibrated matmul peak of each dtype: the share is
the time the work would take at those peaks over the time it took, so a bf16 forward with an
fp32 optimizer step is judged against both peaks. A data-bound variant's bytes per call over
its time is set against the measured copy bandwidth. A share above 1 means the measurement
is wrong somewhere (a peak measured under load, a count that includes work done elsewhere),
and is flagged, never shown as a triumph.

The time per call is the median of the newest asv results where there are some (the report's
figures), else the one plain call `proofbench profile` timed; `Limit.timed_by` says which.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from proofbench.machine.calibrate import Calibration

OVER = 1.0  # a share above this is a measurement problem
_KWH = 3.6e6  # joules


@dataclass(frozen=True)
class Limit:
    """One variant's achieved rate against the machine's calibrated limit.

    `rate` and `peak` are operations/s (bound "compute") or bytes/s ("data"); `dtype` names
    the peak's dtype, "mixed" when no dtype holds 90% of the operations, "memory" for
    bandwidth. Where no share can be given, `share` is None and `reason` says why.
    """

    variant: str
    bound: str
    timed_by: str  # results | profile
    seconds: float | None
    rate: float | None
    peak: float | None
    dtype: str | None
    share: float | None
    reason: str = ""

    @property
    def over_peak(self) -> bool:
        """True when the share exceeds the measured peak: a measurement problem."""
        return self.share is not None and self.share > OVER


def _seconds(results: float | None, profiled: float | None) -> tuple[float | None, str]:
    if results is not None and results > 0 and not math.isnan(results):
        return results, "results"
    return (profiled, "profile") if profiled and profiled > 0 else (None, "none")


def _compute(flops: dict[str, float], calibration: Calibration) -> tuple[float | None, str | None, str]:
    # Time the counted work would take at each dtype's peak, summed; (that time, dtype, reason).
    missing = [d for d in flops if flops[d] and calibration.peak(d) is None]
    if missing:
        why = "; ".join(f"{d}: {calibration.unavailable.get(d, 'not calibrated')}" for d in missing)
        return None, None, f"no calibrated peak for {', '.join(missing)} ({why})"
    at_peak = sum(count / calibration.peak(d).rate for d, count in flops.items() if count)
    total = sum(flops.values())
    top = max(flops, key=flops.get)
    return at_peak, (top if flops[top] >= 0.9 * total else "mixed"), ""


def limit(variant: str, bound: str, flops: dict[str, float], bytes_moved: float | None,
          calibration: Calibration | None, results_seconds: float | None = None,
          profiled_seconds: float | None = None) -> Limit:
    """The variant's `Limit` (see the module docstring)."""
    seconds, timed_by = _seconds(results_seconds, profiled_seconds)
    base = dict(variant=variant, bound=bound, timed_by=timed_by, seconds=seconds)
    if seconds is None:
        return Limit(**base, rate=None, peak=None, dtype=None, share=None, reason="no time per call measured")
    if bound == "data":
        rate = bytes_moved / seconds if bytes_moved else None
        peak = calibration.bandwidth if calibration else None
        reason = ("no bytes moved declared" if rate is None else "" if peak else "no bandwidth calibrated")
        return Limit(**base, rate=rate, peak=peak.rate if peak else None, dtype="memory",
                     share=rate / peak.rate if rate and peak else None, reason=reason)
    total = sum(flops.values())
    if not total:
        return Limit(**base, rate=None, peak=None, dtype=None, share=None, reason="no matmul-class operations counted")
    if calibration is None:
        return Limit(**base, rate=total / seconds, peak=None, dtype=None, share=None, reason="no calibration")
    at_peak, dtype, reason = _compute(flops, calibration)
    if at_peak is None:
        return Limit(**base, rate=total / seconds, peak=None, dtype=None, share=None, reason=reason)
    return Limit(**base, rate=total / seconds, peak=total / at_peak, dtype=dtype, share=at_peak / seconds)


@dataclass(frozen=True)
class Energy:
    """Energy per call and per item where the hardware measured it; else None and the reason."""

    joules_per_call: float | None
    joules_per_item: float | None
    source: str
    caveat: str
    reason: str

    @property
    def items_per_kwh(self) -> float | None:
        """Items one kilowatt-hour pays for, at the measured joules per item."""
        return _KWH / self.joules_per_item if self.joules_per_item else None


def energy(joules: float | None, calls: int, items: int | None, source: str, caveat: str, reason: str) -> Energy:
    """Per-call and per-item energy from the joules of `calls` calls of `items` items each."""
    if joules is None or calls <= 0:
        return Energy(None, None, source, caveat, reason or "not measured")
    per_call = joules / calls
    return Energy(per_call, per_call / items if items else None, source, caveat, "")
