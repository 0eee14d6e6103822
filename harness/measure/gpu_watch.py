"""GPU conditions while a benchmark runs: NVML's telemetry, summarised for the run's record.

Only a CUDA profile's benchmarks are watched, and only where NVML sees a GPU: elsewhere nothing
is sampled and the record gains no key. The summary says whether the clocks were held down
(`throttled`, `throttle_reasons`, `thermal`) or ran at the card's power limit (`power_capped`:
its normal state under full load, not a throttle), how fast the SM clock ran (mean and minimum over
busy samples), the hottest reading, the mean power draw where readable, and how many other
processes computed on the GPU meanwhile (`other_processes`, `other_pids`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from proofbench.machine.nvml import THROTTLE_REASONS, NvmlSampler, Telemetry

SAMPLE_INTERVAL = 0.1  # seconds between readings: NVML's own counters update about this often
_KEPT = ("samples", "throttled", "throttle_reasons", "min_sm_clock_mhz", "mean_sm_clock_mhz", "max_temperature_c",
         "mean_power_w", "other_processes", "other_pids", "power_capped")


def start(device: str, nvml: Any = None, interval: float = SAMPLE_INTERVAL) -> NvmlSampler | None:
    """A running sampler of the GPUs for a benchmark on `device`, or None: not a CUDA profile, or
    no NVML or GPU to read (nothing is sampled then). `nvml` is a stand-in for tests."""
    if device != "cuda":
        return None
    sampler = NvmlSampler(interval, nvml=nvml).__enter__()
    return sampler if sampler.watching else None


def summary(telemetry: Telemetry) -> dict[str, Any]:
    """The compact record of what the GPUs did: JSON-safe, as the sidecar and `Result.gpu` keep it."""
    full = telemetry.to_dict()
    return {**{key: full[key] for key in _KEPT}, "thermal": full["thermal_throttled"]}


_RECORD_SHAPE = {"throttled": bool, "throttle_reasons": list, "other_processes": int, "other_pids": list}


def record(found: object) -> dict[str, Any] | None:
    """`found` (a run record's `gpu`) where it has the shape `summary` writes, else None: a
    record of any other shape (a hand-edited or foreign sidecar) is not one, and a result keeps
    no GPU record rather than one a verdict would misread."""
    if not isinstance(found, dict) or not found:
        return None
    for key, kind in _RECORD_SHAPE.items():
        value = found.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return None
    if not all(isinstance(r, str) for r in found["throttle_reasons"]) or \
            not all(isinstance(p, int) and not isinstance(p, bool) for p in found["other_pids"]):
        return None
    return found


@dataclass(frozen=True)
class GpuConditions:
    """What stored GPU records say about the conditions of a timing: the throttle reasons seen,
    and the other processes computing on the GPU meanwhile (their ids and the most at once).

    A timing taken while either happened is not the machine's own speed: the clocks were held
    down, or the GPU was shared. `of` merges the records of the rows behind one figure.
    """

    throttle_reasons: tuple[str, ...] = ()
    other_pids: tuple[int, ...] = ()
    other_processes: int = 0

    @property
    def throttled(self) -> bool:
        """The clocks were held down for power, heat or a hardware limit."""
        return bool(self.throttle_reasons)

    @property
    def shared(self) -> bool:
        """Another process computed on the GPU meanwhile."""
        return self.other_processes > 0

    @classmethod
    def of(cls, records: Iterable[dict[str, Any] | None]) -> "GpuConditions | None":
        """The conditions over `records` (`summary` dicts; None where a row has none), or None
        when no row was watched."""
        watched = [r for r in records if r]
        if not watched:
            return None
        # a record stored before the power cap stopped counting as a throttle may still name it
        reasons = {str(x) for r in watched if r.get("throttled") for x in r.get("throttle_reasons") or ()
                   if x in THROTTLE_REASONS}
        pids = {int(p) for r in watched for p in r.get("other_pids") or ()}
        return cls(tuple(sorted(reasons)), tuple(sorted(pids)),
                   max(int(r.get("other_processes") or 0) for r in watched))
