"""GPU profiles and GPU telemetry through NVML (module `pynvml`, from nvidia-ml-py).

`gpu_profiles()` describes each GPU once: name, memory, driver, CUDA driver version,
compute capability, power limit and maximum clocks. `NvmlSampler` samples utilisation,
temperature, SM clock, power draw, clock-event ("throttle") reasons and the other processes
computing on each GPU in a background thread while a benchmark runs. Both take the NVML
module as an argument (`nvml=`) so tests hand in a fake. Without the NVML library, or without
a GPU, nothing raises: the answer is empty and a plain reason says why ("NVML not available:
NVML Shared Library Not Found").
"""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any, Callable

from proofbench.errors import DeclarationError, InputError
from proofbench.machine import gpu_processes

# Bits of NVML's clocks-event reasons (called clocks-throttle reasons before driver 535).
REASON_BITS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}
_IDLE_BIT = 0x001
THERMAL_REASONS = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"})
# Reasons that hold the clocks below what the work asked for. Idle, application/display
# clock settings and sync boost are configuration or the absence of work, not a slowdown. The
# software power cap is not one either: it is the card's own operating point under full load
# (an H100 ran at it, 698 W of 700, through 3 s of bf16 matmuls), so a speed measured there is
# that card's speed; it is recorded (`power_capped`) and said, never a reason to doubt a figure.
POWER_CAP = "sw_power_cap"
THROTTLE_REASONS = THERMAL_REASONS | {"hw_slowdown", "hw_power_brake_slowdown", "board_limit", "reliability"}
_REASON_FUNCTIONS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")


def decode_reasons(mask: int) -> tuple[str, ...]:
    """The names of the bits set in an NVML clocks-event reasons mask; unknown bits as hex."""
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    unknown = mask & ~sum(REASON_BITS)
    if unknown:
        names.append(f"unknown_{unknown:#x}")
    return tuple(names)


def load_nvml() -> tuple[ModuleType | None, str | None]:
    """The `pynvml` module, or None and the reason it cannot be imported."""
    try:
        import pynvml  # imported lazily: most machines that import harness have no GPU
    except ImportError as exc:
        return None, f"NVML not available: nvidia-ml-py is not installed ({exc})"
    return pynvml, None


def _text(value: str | bytes) -> str:
    # nvidia-ml-py before 11.515 returned bytes for strings
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(nvml: Any, fn: Callable[..., Any], *args: Any) -> Any:
    # a reading this GPU or driver does not support (NotSupported, NoPermission) is None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def _init(nvml: Any) -> str | None:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return f"NVML not available: {exc}"
    return None


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except nvml.NVMLError:
        pass  # shutting down a library that already failed has nothing left to report


def cuda_version_text(encoded: int | None) -> str | None:
    """NVML's CUDA driver version as text: 12040 -> "12.4"."""
    if encoded is None:
        return None
    return f"{encoded // 1000}.{encoded % 1000 // 10}"


@dataclass(frozen=True)
class GpuProfile:
    """One GPU as NVML describes it; None where this GPU or driver does not report a value.

    Units are in the field names: bytes, milliwatts (NVML's enforced power limit), MHz.
    """

    index: int
    name: str
    memory_total_bytes: int
    driver_version: str
    cuda_driver_version: str | None
    compute_capability: tuple[int, int]
    power_limit_mw: int | None
    max_sm_clock_mhz: int | None
    max_memory_clock_mhz: int | None
    uuid: str | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (the compute capability becomes a list)."""
        data = asdict(self)
        data["compute_capability"] = list(self.compute_capability)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GpuProfile":
        """The inverse of `to_dict`; InputError names a missing or unexpected field."""
        expected = set(cls.__dataclass_fields__)
        if set(data) != expected:
            raise InputError(
                f"GPU profile: fields {sorted(set(data) ^ expected)} missing or unexpected; "
                f"expected {sorted(expected)}"
            )
        major, minor = data["compute_capability"]
        return cls(**{**data, "compute_capability": (int(major), int(minor))})


def _profile(nvml: Any, index: int, driver: str, cuda: str | None) -> GpuProfile:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    uuid = _optional(nvml, nvml.nvmlDeviceGetUUID, handle)
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    return GpuProfile(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        memory_total_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        driver_version=driver,
        cuda_driver_version=cuda,
        compute_capability=(int(major), int(minor)),
        power_limit_mw=_optional(nvml, nvml.nvmlDeviceGetEnforcedPowerLimit, handle),
        max_sm_clock_mhz=_optional(nvml, nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM),
        max_memory_clock_mhz=_optional(nvml, nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM),
        uuid=None if uuid is None else _text(uuid),
    )


def gpu_profiles(nvml: Any = None) -> tuple[tuple[GpuProfile, ...], str | None]:
    """Every GPU NVML sees, and None; or an empty tuple and the plain reason there are none.

    `nvml` is the `pynvml` module (the default) or a stand-in with the same functions.
    """
    if nvml is None:
        nvml, reason = load_nvml()
        if nvml is None:
            return (), reason
    reason = _init(nvml)
    if reason:
        return (), reason
    try:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            return (), "no GPU: NVML is installed but reports 0 devices"
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        cuda = cuda_version_text(_optional(nvml, nvml.nvmlSystemGetCudaDriverVersion))
        return tuple(_profile(nvml, index, driver, cuda) for index in range(count)), None
    except nvml.NVMLError as exc:
        return (), f"NVML failed while describing the GPUs: {exc}"
    finally:
        _shutdown(nvml)


@dataclass(frozen=True)
class GpuSample:
    """One reading of one GPU, `at` seconds after sampling began; None where unreadable."""

    at: float
    gpu: int
    utilization_pct: int | None
    temperature_c: int | None
    sm_clock_mhz: int | None
    reasons_mask: int | None
    power_mw: int | None = None
    # Compute processes on this GPU other than this one and its children; None: unreadable.
    others: tuple[int, ...] | None = None
    own_listed: bool = False  # this process (or a child) was among them: the ids are comparable

    @property
    def other_count(self) -> int:
        """How many of the listed processes are certainly not this one. Where this process is
        not listed its own id may read differently (another PID namespace: a container), so one
        of the others may be this process itself."""
        if not self.others:
            return 0
        return len(self.others) if self.own_listed else len(self.others) - 1


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Telemetry:
    """What the GPUs did while a benchmark ran, summarised from the raw samples.

    The seed document 001_920c043e4e1d7954.txt lists "thermal throttling detection" among
    its improvements to analyze_gpu_logs.py and asks to "demonstrate thermal management",
    but it does not say how throttling is recognised (the script itself is not included).
    Here the GPU says so itself: a run is `throttled` when any sample carries a clocks-event
    reason in THROTTLE_REASONS (thermal slowdown, hardware slowdown, power brake, board or
    reliability limit) and `thermal_throttled` when one of them is thermal; `power_capped` when
    one ran at the card's power limit (its normal state under full load, not a throttle).
    SM clocks are summarised over samples the GPU did not mark idle, so the idle clock
    before the work starts does not read as a slowdown. `other_processes` is the most compute
    processes other than this one (and its children) that any sample found on a GPU; a run
    with any is `shared`.
    """

    samples: tuple[GpuSample, ...]
    note: str | None = None

    @property
    def reasons_seen(self) -> tuple[str, ...]:
        """Every clocks-event reason any sample carried, sorted."""
        masks = [s.reasons_mask for s in self.samples if s.reasons_mask]
        return tuple(sorted({name for mask in masks for name in decode_reasons(mask)}))

    @property
    def throttle_reasons(self) -> tuple[str, ...]:
        """The reasons seen that held the clocks down."""
        return tuple(name for name in self.reasons_seen if name in THROTTLE_REASONS)

    @property
    def throttled(self) -> bool:
        """True when the clocks were held down for power, heat or a hardware limit."""
        return bool(self.throttle_reasons)

    @property
    def thermal_throttled(self) -> bool:
        """True when the clocks were held down for heat."""
        return any(name in THERMAL_REASONS for name in self.throttle_reasons)

    @property
    def power_capped(self) -> bool:
        """True when a sample ran at the card's software power limit."""
        return POWER_CAP in self.reasons_seen

    @property
    def other_processes(self) -> int:
        """The most processes, other than this one, that one sample found computing on a GPU."""
        return max((s.other_count for s in self.samples), default=0)

    @property
    def other_pids(self) -> tuple[int, ...]:
        """The ids of those processes, sorted (as NVML reports them)."""
        return tuple(sorted({pid for s in self.samples if s.other_count for pid in s.others}))

    @property
    def shared(self) -> bool:
        """True when another process computed on a GPU while the block ran."""
        return self.other_processes > 0

    def _busy_clocks(self) -> list[int]:
        readable = [s for s in self.samples if s.sm_clock_mhz is not None]
        busy = [s for s in readable if s.reasons_mask is None or not s.reasons_mask & _IDLE_BIT]
        return [s.sm_clock_mhz for s in (busy or readable)]

    def to_dict(self, include_samples: bool = False) -> dict[str, Any]:
        """The summary as a JSON-safe dict; the raw samples too when `include_samples`."""
        temperatures = [s.temperature_c for s in self.samples if s.temperature_c is not None]
        clocks = self._busy_clocks()
        utilization = [s.utilization_pct for s in self.samples if s.utilization_pct is not None]
        power = [s.power_mw / 1000 for s in self.samples if s.power_mw is not None]
        return {
            "samples": len(self.samples),
            "gpus": sorted({s.gpu for s in self.samples}),
            "max_temperature_c": max(temperatures, default=None),
            "min_sm_clock_mhz": min(clocks, default=None),
            "mean_sm_clock_mhz": _mean(clocks),
            "mean_utilization_pct": _mean(utilization),
            "mean_power_w": _mean(power),
            "other_processes": self.other_processes,
            "other_pids": list(self.other_pids),
            "reasons_seen": list(self.reasons_seen),
            "throttle_reasons": list(self.throttle_reasons),
            "throttled": self.throttled,
            "thermal_throttled": self.thermal_throttled,
            "power_capped": self.power_capped,
            "note": self.note,
            **({"raw": [asdict(s) for s in self.samples]} if include_samples else {}),
        }


def _reason_reader(nvml: Any, handle: Any) -> Callable[[Any], int] | None:
    # drivers from 535 name it ClocksEventReasons; older ones only have ClocksThrottleReasons
    for name in _REASON_FUNCTIONS:
        fn = getattr(nvml, name, None)
        if fn is not None and _optional(nvml, fn, handle) is not None:
            return fn
    return None


class NvmlSampler:
    """Context manager that samples every GPU every `interval` seconds while its block runs.

    `with NvmlSampler(0.1) as sampler: work()`, then `sampler.telemetry()`. One sample of
    each GPU is taken on entry and one on exit, so even a block shorter than `interval`
    has readings. Without NVML or a GPU the block runs unobserved and `telemetry().note`
    says why. `nvml` is the `pynvml` module (the default) or a stand-in; `clock` gives the
    sample times.
    """

    def __init__(self, interval: float = 0.1, *, nvml: Any = None,
                 gpus: tuple[int, ...] | None = None, clock: Callable[[], float] = time.monotonic):
        if not interval > 0:
            raise DeclarationError(f"NvmlSampler: interval must be a positive number of seconds, got {interval!r}")
        self.interval = interval
        self._nvml = nvml
        self._gpus = gpus
        self._clock = clock
        self._handles: list[tuple[int, Any, Callable[[Any], int] | None]] = []
        self._samples: list[GpuSample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0
        self.note: str | None = None

    def _open(self) -> bool:
        if self._nvml is None:
            self._nvml, self.note = load_nvml()
            if self._nvml is None:
                return False
        self.note = _init(self._nvml)
        if self.note:
            return False
        try:
            count = self._nvml.nvmlDeviceGetCount()
            for index in self._gpus if self._gpus is not None else range(count):
                handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
                self._handles.append((index, handle, _reason_reader(self._nvml, handle)))
        except self._nvml.NVMLError as exc:
            self.note = f"NVML failed while opening the GPUs: {exc}"
        if not self._handles:
            self.note = self.note or "no GPU: NVML is installed but reports 0 devices"
            _shutdown(self._nvml)
            return False
        return True

    def _read(self, index: int, handle: Any, reasons: Callable[[Any], int] | None) -> GpuSample:
        nvml = self._nvml
        utilization = _optional(nvml, nvml.nvmlDeviceGetUtilizationRates, handle)
        others, own_listed = gpu_processes.others(
            _optional(nvml, nvml.nvmlDeviceGetComputeRunningProcesses, handle))
        return GpuSample(
            at=self._clock() - self._start,
            gpu=index,
            utilization_pct=None if utilization is None else int(utilization.gpu),
            temperature_c=_optional(nvml, nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
            sm_clock_mhz=_optional(nvml, nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
            reasons_mask=None if reasons is None else _optional(nvml, reasons, handle),
            power_mw=_optional(nvml, nvml.nvmlDeviceGetPowerUsage, handle),
            others=others,
            own_listed=own_listed,
        )

    def _sample_all(self) -> None:
        for index, handle, reasons in self._handles:
            self._samples.append(self._read(index, handle, reasons))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample_all()

    def __enter__(self) -> "NvmlSampler":
        self._start = self._clock()
        if self._open():
            self._sample_all()
            self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._sample_all()
        _shutdown(self._nvml)

    @property
    def watching(self) -> bool:
        """True while the background thread samples at least one GPU."""
        return self._thread is not None

    def telemetry_now(self) -> Telemetry:
        """The telemetry so far, with one more reading of each GPU taken now, sampling going on
        (a block observed in parts, as asv's teardown after every sample observes it)."""
        if self._thread is not None:
            self._sample_all()
        return self.telemetry()

    @property
    def samples(self) -> tuple[GpuSample, ...]:
        """The raw samples taken so far, in time order per GPU."""
        return tuple(self._samples)

    def telemetry(self) -> Telemetry:
        """The samples and the reason there are none, if there are none."""
        return Telemetry(self.samples, self.note)
