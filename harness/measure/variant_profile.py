"""Why a variant takes the time it does: one call profiled, its operations counted, its energy read.

`profile_subject` prepares a subject's workload in this process (as a benchmark process does:
`Context`, `Subject.prepare`, `Variant.run`), and for each variant runs a warm-up call, one
plain timed call, one call under torch.profiler (and under a sampling Python profiler when
torch saw no aten operator, or when operators cover less than half of the call), one call
counting its operations per dtype, and calls for at least `energy_seconds` under an
EnergyMeter. Traces go to `<out_dir>/<variant>.trace.json` (the Python profile of a call
that also ran torch operators to `<variant>.python.trace.json`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from proofbench import capability
from proofbench.declare import Context, Subject, Variant, Workload
from proofbench.errors import Skip
from proofbench.measure.energy import POWERCAP, EnergyMeter, EnergyReading
from proofbench.measure.flops import FlopCount, count_flops
from proofbench.measure.profiler import CallProfile, python_profile, torch_profile
from proofbench.measure.timer import sync_clock

COVERAGE = 0.5  # below this share of the call inside torch operators, Python is profiled too
ENERGY_SECONDS = 1.0


@dataclass(frozen=True)
class Settings:
    """How `profile_subject` runs: device, torch threads, where to write, energy sources."""

    device: str = "cpu"
    threads: int = 1
    energy_seconds: float = ENERGY_SECONDS
    cache_dir: Path | None = None
    powercap: Path = POWERCAP
    nvml: Any = None


@dataclass(frozen=True)
class VariantProfile:
    """What one variant's profile found; `status` ok, skipped or failed (`reason` says why)."""

    subject: str
    size: str
    variant: str
    status: str
    reason: str = ""
    bound: str = "compute"
    items: int | None = None
    call_seconds: float | None = None  # one plain call after the warm-up
    profile: CallProfile | None = None
    python: CallProfile | None = None  # the Python profile beside a torch one
    flops: FlopCount | None = None
    flops_note: str = ""
    bytes_moved: float | None = None
    energy: EnergyReading | None = None
    energy_calls: int = 0

    @property
    def energy_per_call(self) -> float | None:
        """Joules per call where the hardware measured them."""
        if self.energy is None or self.energy.joules is None or not self.energy_calls:
            return None
        return self.energy.joules / self.energy_calls

    @property
    def traces(self) -> dict[str, str]:
        """Trace files by profiler kind."""
        return {p.kind: str(p.trace) for p in (self.profile, self.python) if p is not None}

    @property
    def explaining(self) -> CallProfile | None:
        """The profile that accounts for the call's time: the Python one where it was taken."""
        return self.python or self.profile

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe summary (the profiles' rows and trace paths, counts, energy)."""
        return {
            "subject": self.subject, "size": self.size, "variant": self.variant, "status": self.status,
            "reason": self.reason, "bound": self.bound, "items": self.items, "call_seconds": self.call_seconds,
            "profiles": {p.kind: _call_dict(p) for p in (self.profile, self.python) if p is not None},
            "flops": None if self.flops is None else {"by_dtype": self.flops.by_dtype, "ops": self.flops.ops,
                                                      "uncounted": list(self.flops.uncounted)},
            "flops_note": self.flops_note, "bytes_moved": self.bytes_moved,
            "energy": None if self.energy is None else self.energy.to_dict(), "energy_calls": self.energy_calls,
        }


def _call_dict(profile: CallProfile) -> dict[str, Any]:
    return {"seconds": profile.seconds, "calls": profile.calls, "coverage": profile.coverage,
            "aten_ops": profile.aten_ops, "trace": str(profile.trace), "rows": [r.to_dict() for r in profile.rows]}


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _energy(call: Callable[[], Any], settings: Settings) -> tuple[EnergyReading, int]:
    # Enough calls to span `energy_seconds`: counters tick every millisecond (RAPL) or slower.
    # Without a counter there is nothing to spend the calls on.
    calls = 0
    with EnergyMeter(settings.device, powercap=settings.powercap, nvml=settings.nvml) as meter:
        start = sync_clock()
        while meter.measurable and (calls == 0 or sync_clock() - start < settings.energy_seconds):
            call()
            calls += 1
    return meter.reading, calls


def _profiles(call: Callable[[], Any], out_dir: Path, name: str, device: str) -> tuple[CallProfile, CallProfile | None]:
    first = torch_profile(call, out_dir / f"{name}.trace.json", device)
    if first.aten_ops == 0:
        return python_profile(call, out_dir / f"{name}.trace.json"), None
    if first.coverage < COVERAGE:
        return first, python_profile(call, out_dir / f"{name}.python.trace.json")
    return first, None


def _counted(call: Callable[[], Any], profile: CallProfile) -> tuple[FlopCount | None, str, Any]:
    if profile.kind != "torch":
        return None, "no torch operator ran: nothing to count", call()
    try:
        flops, out = count_flops(call)
    except Exception as exc:  # a variant a dispatch mode cannot see through (compiled code)
        return None, f"not counted: {_reason(exc)}", call()
    return flops, "", out


def profile_variant(subject: Subject, variant: Variant, workload: Workload, size: str, out_dir: Path,
                    settings: Settings) -> VariantProfile:
    """Profile one variant on its prepared workload (see the module docstring)."""
    call = functools.partial(variant.run, workload.inputs)  # no Python frame of its own
    call()  # warm-up
    start = sync_clock()
    call()
    seconds = sync_clock() - start
    profile, python = _profiles(call, out_dir, variant.name, settings.device)
    flops, note, out = _counted(call, profile)
    moved = float(subject.bytes_moved(workload.inputs, out)) if subject.bytes_moved else None
    energy, calls = _energy(call, settings)
    return VariantProfile(subject.key, size, variant.name, "ok", "", subject.bound, workload.items, seconds,
                          profile, python, flops, note, moved, energy, calls)


def _prepared(subject: Subject, variant: Variant, size: str, settings: Settings) -> Workload:
    ctx = Context(size=subject.size(size), device=settings.device, cache_dir=settings.cache_dir,
                  threads=settings.threads, variant=variant.name)
    return subject.prepare(ctx)


def profile_subject(subject: Subject, size: str, out_dir: Path, settings: Settings,
                    variants: tuple[str, ...] = ()) -> list[VariantProfile]:
    """Profile `variants` (default: all) of `subject` at `size`; traces go under `out_dir`."""
    import torch

    chosen = [subject.variant(v) for v in variants] if variants else list(subject.variants)
    before = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    try:
        if subject.build_cache is not None and settings.cache_dir is not None:
            settings.cache_dir.mkdir(parents=True, exist_ok=True)
            subject.build_cache(settings.cache_dir, (subject.size(size),))
        return [_one(subject, v, size, out_dir, settings) for v in chosen]
    finally:
        torch.set_num_threads(before)


def _one(subject: Subject, variant: Variant, size: str, out_dir: Path, settings: Settings) -> VariantProfile:
    missing = capability.missing(variant.requires, settings.device)
    if missing:
        return VariantProfile(subject.key, size, variant.name, "skipped", missing, subject.bound)
    try:
        workload = _prepared(subject, variant, size, settings)
        return profile_variant(subject, variant, workload, size, out_dir, settings)
    except Skip as exc:
        return VariantProfile(subject.key, size, variant.name, "skipped", str(exc), subject.bound)
    except Exception as exc:
        return VariantProfile(subject.key, size, variant.name, "failed", _reason(exc), subject.bound)

