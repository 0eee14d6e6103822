"""Energy of a block of work, read from the hardware's own counters: RAPL on CPUs, NVML on NVIDIA GPUs.

`with EnergyMeter("cpu") as meter: work()`, then `meter.reading`: joules with their source,
or None and the plain reason the hardware cannot say here. Nothing is estimated: a machine
without a readable counter gets "not measurable" with the reason, never a guess from a TDP.

RAPL (Linux powercap, /sys/class/powercap/intel-rapl:N) counts microjoules per CPU package in
a counter that restarts at 0 after `max_energy_range_uj`; one restart between two readings is
undone here. Since Linux 5.10 `energy_uj` is readable by root only (CVE-2020-8694), which is
reported as the reason. NVML's `nvmlDeviceGetTotalEnergyConsumption` counts millijoules since
the driver loaded (Volta and newer). Both count the whole package or board: other processes'
work is in the figure too, which `EnergyReading.caveat` says.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from proofbench.errors import DeclarationError, InputError
from proofbench.machine.nvml import load_nvml

POWERCAP = Path("/sys/class/powercap")
RAPL_CAVEAT = ("RAPL counts the whole CPU package (cores, caches, uncore; DRAM not included): "
               "every process running on it is in the figure, not only this work")
NVML_CAVEAT = "NVML counts the whole GPU board: every process using the GPU is in the figure"
_DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class EnergyReading:
    """Joules used while a block ran, or None and `reason`; `caveat` says what else is counted."""

    joules: float | None
    seconds: float
    source: str  # "rapl", "nvml", or "none"
    caveat: str | None = None
    reason: str | None = None

    @property
    def measured(self) -> bool:
        """True when the hardware gave a figure."""
        return self.joules is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict; `from_dict` reads it back."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EnergyReading":
        """The inverse of `to_dict`; InputError names a missing or unexpected field."""
        expected = set(cls.__dataclass_fields__)
        if not isinstance(data, dict) or set(data) != expected:
            raise InputError(f"energy reading: expected the fields {sorted(expected)}, got {data!r}")
        return cls(**data)


def counter_delta(start: int, end: int, max_range: int) -> int:
    """The count between two readings of a counter that restarts at 0 after `max_range`."""
    return end - start if end >= start else max_range - start + end


@dataclass(frozen=True)
class RaplZone:
    """One top-level powercap zone (a CPU package): its `energy_uj` file and counter range."""

    path: Path
    name: str
    max_range_uj: int

    def read_uj(self) -> int:
        """The counter now, in microjoules."""
        return int((self.path / "energy_uj").read_text().strip())


def _zone(path: Path) -> RaplZone:
    name = (path / "name").read_text().strip() if (path / "name").exists() else path.name
    return RaplZone(path, name, int((path / "max_energy_range_uj").read_text().strip()))


def rapl_zones(root: Path = POWERCAP) -> tuple[tuple[RaplZone, ...], str | None]:
    """The CPU package zones whose counters this process can read, or () and the reason."""
    if not root.is_dir():
        return (), f"no RAPL: {root} does not exist (no powercap driver, or not exposed to this machine)"
    top = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
    if not top:
        return (), f"no RAPL: {root} has no intel-rapl zones"
    try:
        zones = [_zone(p) for p in top]
        packages = [z for z in zones if z.name.startswith("package")]
        # psys (platform) covers the packages too: summed with them it would count them twice
        chosen = tuple(packages or [z for z in zones if z.name != "psys"] or zones)
        for zone in chosen:
            zone.read_uj()
    except PermissionError as exc:
        return (), (f"RAPL not readable: {exc.filename} is readable by root only (Linux 5.10 and later restrict "
                    "energy_uj, CVE-2020-8694); run as root or grant read access")
    except (OSError, ValueError) as exc:
        return (), f"RAPL not readable: {exc}"
    return chosen, None


class _Rapl:
    source, caveat = "rapl", RAPL_CAVEAT

    def __init__(self, zones: tuple[RaplZone, ...]) -> None:
        self.zones = zones

    def read(self) -> tuple[int, ...]:
        return tuple(z.read_uj() for z in self.zones)

    def joules(self, start: tuple[int, ...], end: tuple[int, ...]) -> float:
        return sum(counter_delta(a, b, z.max_range_uj) for a, b, z in zip(start, end, self.zones)) / 1e6

    def close(self) -> None:
        pass


class _Nvml:
    source, caveat = "nvml", NVML_CAVEAT

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml, self.handle = nvml, handle

    def read(self) -> int:
        return int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def joules(self, start: int, end: int) -> float:
        return (end - start) / 1e3  # millijoules; a 64-bit count since the driver loaded

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError:
            pass  # the readings are taken; a failed shutdown changes none of them


def _open_nvml(nvml: Any, gpu: int) -> tuple[_Nvml | None, str | None]:
    if nvml is None:
        nvml, reason = load_nvml()
        if nvml is None:
            return None, reason
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return None, f"NVML not available: {exc}"
    source = _Nvml(nvml, None)
    try:
        source.handle = nvml.nvmlDeviceGetHandleByIndex(gpu)
        source.read()
    except nvml.NVMLError as exc:
        source.close()
        return None, f"NVML cannot read GPU {gpu}'s energy counter: {exc} (needs a Volta or newer GPU)"
    return source, None


class EnergyMeter:
    """Context manager: the energy the hardware counted while its block ran.

    `device` "cpu" reads RAPL under `powercap`; "cuda" reads GPU `gpu`'s NVML counter
    (`nvml` is the pynvml module, the default, or a stand-in). After the block, `reading`
    holds joules or the reason there are none; the block runs either way.
    """

    def __init__(self, device: str = "cpu", *, powercap: Path = POWERCAP, nvml: Any = None, gpu: int = 0,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if device not in _DEVICES:
            raise DeclarationError(f"EnergyMeter: device must be one of {', '.join(_DEVICES)}, got {device!r}")
        self.device, self._powercap, self._nvml, self._gpu, self._clock = device, powercap, nvml, gpu, clock
        self._source: _Rapl | _Nvml | None = None
        self._reason: str | None = None
        self.reading: EnergyReading | None = None

    def __enter__(self) -> "EnergyMeter":
        if self.device == "cpu":
            zones, self._reason = rapl_zones(self._powercap)
            self._source = _Rapl(zones) if zones else None
        else:
            self._source, self._reason = _open_nvml(self._nvml, self._gpu)
        self._start = self._source.read() if self._source else None
        self._began = self._clock()
        return self

    @property
    def measurable(self) -> bool:
        """True inside the block when a counter is being read (False: `reading` will give the reason)."""
        return self._source is not None

    def __exit__(self, *exc: object) -> None:
        seconds = self._clock() - self._began
        if self._source is None:
            self.reading = EnergyReading(None, seconds, "none", reason=self._reason)
            return
        try:
            joules = self._source.joules(self._start, self._source.read())
            self.reading = EnergyReading(joules, seconds, self._source.source, caveat=self._source.caveat)
        finally:
            self._source.close()
