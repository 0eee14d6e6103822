"""This machine's hardware and software profile: what asv calls a machine, enriched.

`capture()` reads it (CPU, the instruction-set features that decide ML speed and torch's
detected CPU capability, cores, frequency and governor, RAM, OS, Python, torch, CUDA, cuDNN,
GPUs); `to_asv_machine_json()` gives asv's `~/.asv-machine.json` content for it;
`fingerprint()` hashes the parts that change what a benchmark measures, so that results
from a changed machine are filed under a new machine entry instead of being mixed in.
`to_dict()`/`from_dict()` carry a format version (version 1, from before the instruction-set
features were captured, still reads); the database stores that JSON.

A machine's default name is its hostname and a short hash of its /etc/machine-id (else of its
hardware), so two hosts both called `vm` are two machines, not one that changed.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import platform
import re
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import psutil

from proofbench.errors import DeclarationError, InputError
from proofbench.machine.nvml import GpuProfile, gpu_profiles

FORMAT_VERSION = 2
FINGERPRINT_VERSION = 2
ASV_MACHINE_VERSION = 1  # asv.machine.MachineCollection.api_version
_CPUINFO = Path("/proc/cpuinfo")
_MACHINE_ID = Path("/etc/machine-id")
NAME_VAR = "PROOFBENCH_MACHINE"  # the machine name every measuring command uses, where set
# The instruction-set features that decide ML speed on a CPU, as /proc/cpuinfo names them:
# x86 `flags` (bf16 and fp16 arithmetic, int8 dot products, AMX tiles), ARM `Features`.
ISA_FLAGS = {
    "x86": ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni",
            "amx_tile", "amx_bf16", "amx_int8"),
    "arm": ("asimddp", "bf16", "i8mm", "sve", "sve2", "svebf16", "svei8mm"),
}
_GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
_GIB = 2**30


@dataclass(frozen=True)
class MachineProfile:
    """One machine as benchmarked: hardware, operating system and the torch stack.

    `name` is asv's machine name (see `default_name`). `isa` lists which of `ISA_FLAGS` the CPU
    reports; `torch_cpu_capability` is what torch's dispatcher picked ("AVX512", "AVX2",
    "SVE256", "DEFAULT"). Fields that cannot be
    read on this machine are None; `gpu_note` says plainly why `gpus` is empty ("NVML not
    available: ...", "no GPU: ..."). Units are in the field names.
    """

    name: str
    hostname: str
    cpu_model: str
    arch: str
    isa: tuple[str, ...]
    torch_cpu_capability: str | None
    physical_cores: int | None
    logical_cores: int
    cpu_freq_min_mhz: float | None
    cpu_freq_max_mhz: float | None
    cpu_freq_current_mhz: float | None
    cpu_governor: str | None
    ram_total_bytes: int
    os: str
    os_release: str | None
    kernel: str
    python_version: str
    torch_version: str | None
    cuda_version: str | None
    cudnn_version: int | None
    torch_threads: int | None
    gpus: tuple[GpuProfile, ...]
    gpu_note: str | None

    def __post_init__(self) -> None:
        if not self.name or self.name == "version" or any(c in self.name for c in "/\\\0"):
            raise DeclarationError(
                f"machine profile: name {self.name!r} must be non-empty, not 'version', and free of "
                "'/', '\\' and NUL (asv uses it as a key of its machine file and as a directory name)"
            )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict with a format version; `from_dict` reads it back."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["gpus"] = [gpu.to_dict() for gpu in self.gpus]
        data["format"] = FORMAT_VERSION
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MachineProfile":
        """The inverse of `to_dict`; InputError names a wrong version or field. A version 1
        profile reads with no instruction-set features and no torch CPU capability."""
        if data.get("format") == 1:
            data = {**data, "format": FORMAT_VERSION, "isa": [], "torch_cpu_capability": None}
        if data.get("format") != FORMAT_VERSION:
            raise InputError(
                f"machine profile: field 'format' is {data.get('format')!r}; expected {FORMAT_VERSION} (or 1)"
            )
        values = {k: v for k, v in data.items() if k != "format"}
        expected = {f.name for f in fields(cls)}
        if set(values) != expected:
            raise InputError(
                f"machine profile: fields {sorted(set(values) ^ expected)} missing or unexpected; "
                f"expected {sorted(expected)}"
            )
        values["gpus"] = tuple(GpuProfile.from_dict(gpu) for gpu in values["gpus"])
        values["isa"] = tuple(values["isa"])
        return cls(**values)


def isa_flags(cpuinfo: str) -> tuple[str, ...]:
    """The `ISA_FLAGS` a /proc/cpuinfo text reports (its first processor's `flags` or `Features`)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            present = set(value.split())
            return tuple(f for family in ISA_FLAGS.values() for f in family if f in present)
    return ()


def _cpuinfo() -> str:
    try:
        return _CPUINFO.read_text(errors="replace")
    except OSError:
        return ""  # not Linux, or /proc hidden


def default_name(hostname: str, machine_id: Path = _MACHINE_ID, hardware: str = "") -> str:
    """`<hostname>-<6 hex digits>`: a hash of the OS installation's machine id, or of `hardware`
    (the CPU, cores and RAM) where there is none, so equal hostnames do not make one machine."""
    try:
        identity = machine_id.read_text().strip()
    except OSError:
        identity = ""
    digest = hashlib.sha256((identity or hardware).encode()).hexdigest()[:6]
    return f"{hostname or 'machine'}-{digest}"


def _cpu_model(cpuinfo: str) -> str:
    # the same source and key asv's own machine defaults use
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def _mhz(value: float | None) -> float | None:
    # psutil reports 0.0 where the kernel exposes no limit
    return round(float(value), 1) if value else None


def _cpu_frequency() -> tuple[float | None, float | None, float | None]:
    try:
        freq = psutil.cpu_freq()
    except (OSError, NotImplementedError):
        freq = None
    if freq is None:
        return None, None, None
    return _mhz(freq.min), _mhz(freq.max), _mhz(freq.current)


def _governor(path: Path = _GOVERNOR) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def _os_release() -> str | None:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        return None


def _torch_stack() -> tuple[str | None, str | None, int | None, int | None, str | None]:
    if importlib.util.find_spec("torch") is None:
        return None, None, None, None, None
    import torch  # imported lazily: profiling a machine must not require torch

    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: None)()
    return torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.get_num_threads(), capability


MACHINE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")  # asv's results folder and file names


def check_name(name: str) -> str:
    """`name` if it can name asv's results folder and proofbench's files (letters, digits, '_',
    '.', '-'; no path, no option); else an InputError that says how to name it."""
    if not MACHINE_NAME.fullmatch(name):
        raise InputError(f"machine name {name[:80]!r}: expected 1-200 letters, digits, '_', '.' or '-', not "
                         f"starting with '.' or '-' (it names a folder of results); name it with ${NAME_VAR} "
                         f"(or `proofbench machine --name`)")
    return name


def capture(name: str | None = None, *, nvml: Any = None) -> MachineProfile:
    """Profile this machine now. `name`, else $PROOFBENCH_MACHINE, overrides `default_name` as
    asv's machine name; `nvml` is the `pynvml` module (the default) or a stand-in for tests."""
    hostname = platform.uname().node
    cpuinfo = _cpuinfo()
    freq_min, freq_max, freq_current = _cpu_frequency()
    torch_version, cuda, cudnn, threads, capability = _torch_stack()
    gpus, gpu_note = gpu_profiles(nvml)
    cpu_model = _cpu_model(cpuinfo)
    cores = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    ram = psutil.virtual_memory().total
    name = name or os.environ.get(NAME_VAR, "").strip() or default_name(
        hostname, hardware=f"{cpu_model}|{cores}|{math.ceil(ram / _GIB)}")
    if len(name) > 200:
        raise InputError(f"machine name {name[:80]!r}...: {len(name)} characters; at most 200")
    return MachineProfile(
        name=name,
        hostname=hostname,
        cpu_model=cpu_model,
        arch=platform.machine(),
        isa=isa_flags(cpuinfo),
        torch_cpu_capability=capability,
        physical_cores=psutil.cpu_count(logical=False),
        logical_cores=cores,
        cpu_freq_min_mhz=freq_min,
        cpu_freq_max_mhz=freq_max,
        cpu_freq_current_mhz=freq_current,
        cpu_governor=_governor(),
        ram_total_bytes=ram,
        os=platform.system(),
        os_release=_os_release(),
        kernel=platform.release(),
        python_version=platform.python_version(),
        torch_version=torch_version,
        cuda_version=cuda,
        cudnn_version=cudnn,
        torch_threads=threads,
        gpus=gpus,
        gpu_note=gpu_note,
    )


def fingerprint_parts(profile: MachineProfile) -> dict[str, Any]:
    """What `fingerprint` hashes: the parts that change what a benchmark measures.

    The instruction-set features are in: a hypervisor that hides avx512_bf16 or AMX from the same
    CPU model changes what bf16 and int8 variants measure. Left out on purpose: readings that
    move between runs (current frequency, temperature), the hostname (a renamed host is the
    same machine), GPU UUIDs (an identical card is the same hardware), and per-run settings
    (thread count, governor) that results record elsewhere. RAM is in GiB rounded up: MemTotal sits a little under the installed size
    and moves by megabytes between kernels.
    """
    return {
        "fingerprint_version": FINGERPRINT_VERSION,
        "cpu_model": profile.cpu_model,
        "arch": profile.arch,
        "isa": list(profile.isa),
        "torch_cpu_capability": profile.torch_cpu_capability,
        "physical_cores": profile.physical_cores,
        "logical_cores": profile.logical_cores,
        "ram_gib": math.ceil(profile.ram_total_bytes / _GIB),
        "gpus": [
            {"name": g.name, "memory_total_bytes": g.memory_total_bytes,
             "compute_capability": list(g.compute_capability),
             "driver_version": g.driver_version, "cuda_driver_version": g.cuda_driver_version}
            for g in sorted(profile.gpus, key=lambda g: g.index)
        ],
        "torch_version": profile.torch_version,
        "cuda_version": profile.cuda_version,
        "cudnn_version": profile.cudnn_version,
    }


def fingerprint(profile: MachineProfile) -> str:
    """A stable 16-hex-digit hash of `fingerprint_parts(profile)`."""
    canonical = json.dumps(fingerprint_parts(profile), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def gpu_label(profile: MachineProfile) -> str:
    """The GPUs in one short string: "none", "NVIDIA H100 80GB HBM3", "2x NVIDIA A100 ..."."""
    counts = Counter(gpu.name for gpu in sorted(profile.gpus, key=lambda g: g.index))
    if not counts:
        return "none"
    return ", ".join(name if n == 1 else f"{n}x {name}" for name, n in counts.items())


def to_asv_machine_json(profile: MachineProfile) -> dict[str, Any]:
    """asv's `~/.asv-machine.json` content for this profile (asv 0.6 format, version 1).

    asv's six keys keep asv's own formats (`num_cpu` and `ram` are strings; `ram` in
    bytes as asv reads MemTotal). Two keys are added: `gpu` and `proofbench_fingerprint`.
    asv copies every key of the entry into each result's params and `asv publish` makes
    each a graph parameter, so both must be short strings; a changed fingerprint then
    starts a new line in asv's graphs too, instead of joining the old one.
    """
    entry = {
        "machine": profile.name,
        "os": f"{profile.os} {profile.kernel}",
        "arch": profile.arch,
        "cpu": profile.cpu_model,
        "num_cpu": str(profile.logical_cores),
        "ram": str(profile.ram_total_bytes),
        "gpu": gpu_label(profile),
        "proofbench_fingerprint": fingerprint(profile),
    }
    return {"version": ASV_MACHINE_VERSION, profile.name: entry}


def write_asv_machine_file(profile: MachineProfile, path: Path | None = None) -> Path:
    """Add or replace this profile's entry in asv's machine file, keeping other machines.

    `path` defaults to `~/.asv-machine.json`, where `asv run` looks.
    """
    path = path or Path.home() / ".asv-machine.json"
    data: dict[str, Any] = {"version": ASV_MACHINE_VERSION}
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
        if data.get("version") != ASV_MACHINE_VERSION:
            raise InputError(f"{path}: field 'version' is {data.get('version')!r}; expected {ASV_MACHINE_VERSION}")
    data.update(to_asv_machine_json(profile))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=4, sort_keys=True) + "\n")
    tmp.replace(path)
    return path
