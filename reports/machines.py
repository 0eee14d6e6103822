"""Machines as the report shows them: a column of the matrix, and a hardware profile side by side.

A column is one machine row (a name at one hardware fingerprint) with the newest figures of
each subject measured on it and the verdict of every claim there. The profile table reads the
JSON that harness/machine.py's `MachineProfile.to_dict` wrote, and whatever other keys a
profile holds are listed as they are. A machine known only from asv results holds those results'
`params` instead: asv's machine description (`cpu`, `num_cpu`, `ram`...) with the environment's
Python and packages mixed in; `facts` shows the description in the captured profile's rows and
leaves the environment out.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from proofbench.analysis.comparison import SubjectFigures
from proofbench.analysis.verdict import Verdict, judge
from proofbench.claim import Claim
from proofbench.db.models import Commit, Machine
from proofbench.reports import formatting as fmt
from proofbench.reports.queries import RunInfo

SIZE_ORDER = {"tiny": 0, "small": 1, "large": 2}


@dataclass(frozen=True)
class MachineColumn:
    """One machine in the report: its newest figures per (subject, size), verdicts, run facts."""

    machine: Machine
    label: str
    anchor: str
    has_gpu: bool
    hardware: str
    commit: Commit | None
    run: RunInfo | None
    figures: dict[tuple[str, str], SubjectFigures]
    verdicts: dict[str, Verdict]
    # where the machine ran several asv environments: each one's newest figures, by environment id
    environments: dict[int, dict[tuple[str, str], SubjectFigures]] = field(default_factory=dict)

    def figures_in(self, environment_id: int) -> dict[tuple[str, str], SubjectFigures]:
        """The newest figures of one asv environment (all of them where the machine ran one)."""
        return self.environments.get(environment_id, self.figures)

    def largest(self, subject: str) -> SubjectFigures | None:
        """The subject's figures at the largest size measured here."""
        return largest(self.figures, subject)


def largest(figures: dict[tuple[str, str], SubjectFigures], subject: str) -> SubjectFigures | None:
    """A subject's figures at the largest size measured: the one nearest real use."""
    mine = [f for (s, _), f in figures.items() if s == subject]
    return max(mine, key=lambda f: SIZE_ORDER.get(f.size, -1)) if mine else None


def profile(machine: Machine) -> dict[str, Any]:
    """The machine's stored profile, or {} when it holds something other than a JSON object."""
    return machine.profile if isinstance(machine.profile, dict) else {}


# asv's machine description (asv.machine.Machine.fields, the keys proofbench's own machine.json adds, and
# the file's version): every other key of a results file's params is the environment's (python, the matrix)
_ASV_OWN = {"machine", "os", "arch", "cpu", "num_cpu", "ram", "gpu", "proofbench_fingerprint", "version", "python"}
_ASV_AS = {"cpu": "cpu_model", "num_cpu": "logical_cores", "proofbench_fingerprint": "fingerprint",
           "python": "python_version"}  # the results' Python, the one machine fact of the environment's


def facts(machine: Machine) -> dict[str, Any]:
    """The machine's profile in the captured profile's keys, with the stored fingerprint where it
    names none. A profile without `cpu_model` (which every captured one has) is asv's description:
    only its own keys are kept, `cpu`, `num_cpu` and `proofbench_fingerprint` under the captured names."""
    p = profile(machine)
    if "cpu_model" not in p:
        p = {_ASV_AS.get(k, k): _asv_value(k, v) for k, v in p.items() if k in _ASV_OWN}
    return {**p, "fingerprint": p.get("fingerprint") or machine.fingerprint}


def _asv_value(key: str, value: Any) -> Any:
    # asv writes num_cpu as a string; a count reads as the captured profile's int
    return int(value) if key == "num_cpu" and str(value).isdigit() else value


def has_gpu(machine: Machine) -> bool:
    """True when the machine's profile lists a GPU."""
    return bool(profile(machine).get("gpus"))


def _hardware(p: dict[str, Any]) -> str:
    cpu = p.get("cpu_model") or "CPU unknown"
    cores = p.get("logical_cores")
    gpus = Counter(str(g.get("name", "GPU")) for g in _gpus(p))
    gpu = ", ".join(n if c == 1 else f"{c}x {n}" for n, c in gpus.items()) or _no_gpu(p, "no GPU", "GPU unknown")
    return f"{cpu}" + (f", {cores} cores" if cores else "") + f"; {gpu}"


def column(machine: Machine, label: str, latest: list[SubjectFigures], claims: list[Claim],
           commit: Commit | None, run: RunInfo | None,
           environments: dict[int, list[SubjectFigures]] | None = None) -> MachineColumn:
    """A machine's column, with every claim judged on the figures at the claim's subject's largest
    size; `environments`: each asv environment's newest figures, where it ran several."""
    figures = {(f.subject, f.size): f for f in latest}
    gpu = has_gpu(machine)
    verdicts = {c.id: judge(c, largest(figures, c.subject), gpu) for c in claims}
    apart = {e: {(f.subject, f.size): f for f in found} for e, found in (environments or {}).items()}
    return MachineColumn(machine, label, f"machine-{machine.id}", gpu, _hardware(facts(machine)),
                         commit, run, figures, verdicts, apart)


def labels(machines: list[Machine]) -> dict[int, str]:
    """Machine names, with a fingerprint where one name has had several hardware profiles."""
    counts = Counter(m.name for m in machines)
    return {m.id: m.name if counts[m.name] == 1 else f"{m.name} ({m.fingerprint[:8]})" for m in machines}


def _gpus(p: dict[str, Any]) -> list[dict[str, Any]]:
    gpus = p.get("gpus")
    return [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []


def _no_gpu(p: dict[str, Any], none: str, unknown: str) -> str:
    # a captured profile lists its GPUs, none too; asv's machine.json and odd profiles say nothing of them
    return none if isinstance(p.get("gpus"), list) else unknown


def _gpu(gpu: dict[str, Any]) -> str:
    parts = [str(gpu.get("name", "GPU"))]
    if gpu.get("memory_total_bytes"):
        parts.append(fmt.byte_size(gpu["memory_total_bytes"]))
    if gpu.get("driver_version"):
        parts.append(f"driver {gpu['driver_version']}")
    if gpu.get("compute_capability"):
        parts.append("compute " + ".".join(str(x) for x in gpu["compute_capability"]))
    if gpu.get("power_limit_mw"):
        parts.append(f"{gpu['power_limit_mw'] / 1000:.0f} W")
    if gpu.get("max_sm_clock_mhz"):
        parts.append(f"SM {gpu['max_sm_clock_mhz']} MHz")
    return ", ".join(parts)


def _mhz(p: dict[str, Any]) -> str:
    keys = ("cpu_freq_min_mhz", "cpu_freq_max_mhz", "cpu_freq_current_mhz")
    if not any(p.get(k) for k in keys):
        return "—"
    return " / ".join(f"{p[k]:.0f}" if p.get(k) else "—" for k in keys) + " MHz"


def _ram(p: dict[str, Any]) -> str:
    # a captured profile's bytes, or asv's `ram` string
    return _asv_ram(p["ram"]) if "ram" in p else fmt.byte_size(p.get("ram_total_bytes"))


def _asv_ram(value: Any) -> str:
    """asv's `ram` as a size with its unit, where the unit can be told.

    asv 0.6 writes bytes: MemTotal's kB times 1024 on Linux, `hw.memsize` on macOS, so always a
    whole number of KiB. Older asv wrote MemTotal's kB as they were, which is a multiple of 1024
    only when the kernel's usable memory is a whole number of MiB. So: a value that is not a
    multiple of 1024 is kB; a multiple of 1024 from 2**30 up is bytes (1 GiB or more; as kB it would
    be a machine of 1 TiB or more whose MemTotal happened to be whole MiB); a smaller multiple of
    1024 could be either (under 1 GiB in bytes, or under 1 TiB in kB), and both readings are shown.
    Anything but digits is shown as it is ('' when asv could not read it)."""
    text = str(value).strip()
    if not text.isdigit():
        return _text(value)
    n = int(text)
    if n % 1024:
        return fmt.byte_size(n * 1024)
    if n >= 2**30:
        return fmt.byte_size(n)
    return f"{fmt.byte_size(n)} or {fmt.byte_size(n * 1024)} (asv's ram {n}: bytes or kB)"


def _os(p: dict[str, Any]) -> str:
    # asv's `os` already joins system and release, and names no release apart
    return f"{_text(p.get('os'))} ({_text(p.get('os_release'))})" if "os_release" in p else _text(p.get("os"))


def _text(value: Any) -> str:
    if value is None or value == "":
        return "—"
    return value if isinstance(value, str) else json.dumps(value)


# (row label, profile keys it covers, how to show it)
_ROWS = (
    ("CPU", ("cpu_model",), lambda p: _text(p.get("cpu_model"))),
    ("architecture", ("arch",), lambda p: _text(p.get("arch"))),
    ("instruction sets for ML", ("isa",), lambda p: ", ".join(p["isa"]) if p.get("isa") else
     ("none of those captured" if "isa" in p else "—")),
    ("torch CPU capability", ("torch_cpu_capability",), lambda p: _text(p.get("torch_cpu_capability"))),
    ("cores (physical / logical)", ("physical_cores", "logical_cores"),
     lambda p: f"{_text(p.get('physical_cores'))} / {_text(p.get('logical_cores'))}"),
    ("CPU frequency (min / max / now)", ("cpu_freq_min_mhz", "cpu_freq_max_mhz", "cpu_freq_current_mhz"), _mhz),
    ("CPU governor", ("cpu_governor",), lambda p: _text(p.get("cpu_governor"))),
    ("RAM", ("ram_total_bytes", "ram"), _ram),
    ("GPUs", ("gpus", "gpu"),
     lambda p: "; ".join(_gpu(g) for g in _gpus(p)) or _no_gpu(p, "none", _text(p.get("gpu")))),
    ("GPU note", ("gpu_note",), lambda p: _text(p.get("gpu_note"))),
    ("CUDA / cuDNN", ("cuda_version", "cudnn_version"),
     lambda p: f"{_text(p.get('cuda_version'))} / {_text(p.get('cudnn_version'))}"),
    ("operating system", ("os", "os_release"), _os),
    ("kernel", ("kernel",), lambda p: _text(p.get("kernel"))),
    ("Python", ("python_version",), lambda p: _text(p.get("python_version"))),
    ("torch (default threads)", ("torch_version", "torch_threads"),
     lambda p: f"{_text(p.get('torch_version'))} ({_text(p.get('torch_threads'))})"),
    ("hostname", ("hostname",), lambda p: _text(p.get("hostname"))),
    ("fingerprint", ("fingerprint",), lambda p: _text(p.get("fingerprint"))),
)
_HIDDEN = {"name", "format", "machine", "version"}  # the column's header, and the formats' versions


def profile_rows(machines: list[Machine]) -> list[tuple[str, list[str]]]:
    """Rows of the side-by-side hardware table: a label and one text per machine."""
    profiles = [facts(m) for m in machines]
    rows = [(label, [show(p) for p in profiles]) for label, _, show in _ROWS]
    known = {k for _, keys, _ in _ROWS for k in keys} | _HIDDEN
    extra = sorted({k for p in profiles for k in p} - known)
    rows += [(key, [_text(p.get(key)) for p in profiles]) for key in extra]
    names = labels(machines)
    if any(m.previous_id for m in machines):
        rows.append(("replaces (hardware changed)", [names.get(m.previous_id, "an earlier profile")
                                                     if m.previous_id else "—" for m in machines]))
    return rows
