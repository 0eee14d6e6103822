"""One call under a profiler: torch.profiler for torch work, a sampling Python profiler for the rest.

`torch_profile` runs a call under torch.profiler (CPU, and CUDA where the device is one, with
record_shapes and profile_memory), writes its Chrome trace and keeps every operator's self
and total time. `python_profile` samples the Python stack with pyinstrument (every 0.1 ms,
over repeated calls until 50 ms are sampled) and writes the samples as a Chrome trace too (one complete event per run of samples in the
same frame), so a subject that does no torch work (LMDB, tokenizers) is still explained
function by function. Both traces open in Perfetto (ui.perfetto.dev) and chrome://tracing.

Times under a profiler are inflated by its own overhead: they say where a call spends its
time, in proportion, not how long it takes (the asv results say that).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from proofbench.errors import InputError
from proofbench.measure.timer import sync_clock

TOP = 20  # operators kept per profile
SAMPLE_INTERVAL = 1e-4  # seconds between Python stack samples
MIN_SAMPLED = 0.05  # seconds of calls sampled at least: a 50 us call alone would be a sample or none
_US = 1e-6
KINDS = ("torch", "python")


@dataclass(frozen=True)
class OperatorRow:
    """One operator (torch) or function (Python) of a profiled call; seconds over the whole call.

    `calls` is None for sampled Python functions (a sampler sees time, not calls).
    """

    name: str
    calls: int | None
    self_seconds: float
    total_seconds: float
    self_device_seconds: float | None = None
    self_memory_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict; `from_dict` reads it back."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OperatorRow":
        """The inverse of `to_dict`; InputError names what is wrong."""
        if not isinstance(data, dict) or set(data) != set(cls.__dataclass_fields__):
            raise InputError(f"operator row: expected the fields {sorted(cls.__dataclass_fields__)}, got {data!r}")
        return cls(**data)


@dataclass(frozen=True)
class CallProfile:
    """A profiled call: which profiler, how long it took under it, its top rows and its trace file.

    Seconds and rows are per call; a Python profile of a short call samples several calls.
    """

    kind: str  # torch | python
    seconds: float
    rows: tuple[OperatorRow, ...]  # by self time, longest first
    trace: Path
    aten_ops: int = 0  # distinct aten operators seen (torch profiles)
    op_seconds: float = 0.0  # self time of every operator together, per call
    calls: int = 1  # calls profiled (a sampled Python profile repeats short calls)

    @property
    def coverage(self) -> float:
        """Share of the call's time spent inside the operators (torch) or sampled (Python)."""
        return self.op_seconds / self.seconds if self.seconds > 0 else 0.0


def _timed(call: Callable[[], Any], clock: Callable[[], float]) -> tuple[float, Any]:
    start = clock()
    out = call()
    return clock() - start, out


def _torch_rows(averages: Any, device: bool) -> list[OperatorRow]:
    rows = []
    for event in averages:
        if event.key.startswith("[memory]"):
            continue  # allocations without an operator: profile_memory's bookkeeping, not work
        self_device = event.self_device_time_total * _US if device else None
        rows.append(OperatorRow(event.key, int(event.count), event.self_cpu_time_total * _US,
                                event.cpu_time_total * _US, self_device, int(event.self_cpu_memory_usage)))
    key = (lambda r: r.self_device_seconds or 0.0) if device else (lambda r: r.self_seconds)
    return sorted(rows, key=key, reverse=True)


def torch_profile(call: Callable[[], Any], trace: Path, device: str = "cpu", top: int = TOP,
                  clock: Callable[[], float] = sync_clock) -> CallProfile:
    """Run `call()` once under torch.profiler; write its Chrome trace to `trace`."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities, record_shapes=True, profile_memory=True) as prof:
        seconds, _ = _timed(call, clock)
    trace.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(trace))
    rows = _torch_rows(prof.key_averages(), cuda)
    aten = sum(1 for r in rows if r.name.startswith("aten::"))
    return CallProfile("torch", seconds, tuple(rows[:top]), trace, aten, sum(r.self_seconds for r in rows))


def _frame(identifier: str) -> tuple[str, str, str]:
    # pyinstrument's frame identifiers: "function\0file\0line", attributes after "\1"
    parts = identifier.split("\x01", 1)[0].split("\x00")
    return (parts + ["", "", ""])[:3]  # type: ignore[return-value]


def _own_stacks(records: list[tuple[list[str], float]]) -> list[tuple[tuple[str, ...], float]]:
    # Drop the frames above the profiled call: everything up to the last frame of this module.
    here = str(Path(__file__).resolve())
    out = []
    for stack, seconds in records:
        frames = [identifier.split("\x01", 1)[0] for identifier in stack]
        mine = [i for i, f in enumerate(frames) if _frame(f)[1] == here]
        own = tuple(frames[mine[-1] + 1:] if mine else frames)
        if own and f"{os.sep}pyinstrument{os.sep}" in _frame(own[0])[1]:
            own = ()  # the sampler stopping itself, not the call
        out.append((own, seconds))
    return out


def _label(identifier: str) -> str:
    function, path, line = _frame(identifier)
    short = "/".join(Path(path).parts[-2:]) if path else "?"
    return f"{function} ({short}:{line})"


def _python_rows(stacks: list[tuple[tuple[str, ...], float]]) -> list[OperatorRow]:
    own: dict[str, float] = {}
    total: dict[str, float] = {}
    for stack, seconds in stacks:
        if stack:
            own[stack[-1]] = own.get(stack[-1], 0.0) + seconds
        for frame in set(stack):
            total[frame] = total.get(frame, 0.0) + seconds
    rows = [OperatorRow(_label(f), None, own.get(f, 0.0), t) for f, t in total.items()]
    return sorted(rows, key=lambda r: (r.self_seconds, r.total_seconds), reverse=True)


def _event(identifier: str, start: float, end: float, pid: int) -> dict[str, Any]:
    function, path, line = _frame(identifier)
    return {"name": function, "cat": "python", "ph": "X", "ts": start, "dur": end - start, "pid": pid,
            "tid": 0, "args": {"file": path, "line": line}}


def chrome_trace(stacks: list[tuple[tuple[str, ...], float]], pid: int | None = None) -> dict[str, Any]:
    """Sampled stacks (in order, each with the seconds it stands for) as a Chrome trace document."""
    pid = os.getpid() if pid is None else pid
    events: list[dict[str, Any]] = []
    opened: list[tuple[str, float]] = []
    now = 0.0
    for stack, seconds in [*stacks, ((), 0.0)]:  # the empty stack at the end closes every frame
        same = 0
        while same < min(len(opened), len(stack)) and opened[same][0] == stack[same]:
            same += 1
        events += [_event(f, start, now, pid) for f, start in reversed(opened[same:])]
        opened = opened[:same] + [(f, now) for f in stack[same:]]
        now += seconds / _US
    meta = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "python (sampled)"}}]
    return {"traceEvents": meta + events, "displayTimeUnit": "ms"}


def python_profile(call: Callable[[], Any], trace: Path, top: int = TOP, interval: float = SAMPLE_INTERVAL,
                   min_seconds: float = MIN_SAMPLED, clock: Callable[[], float] = sync_clock) -> CallProfile:
    """Run `call()` under pyinstrument's sampler, repeated until `min_seconds` have been sampled;
    write the samples as a Chrome trace to `trace`. Rows and seconds are per call."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=interval, async_mode="disabled")
    calls = 0
    profiler.start()
    try:
        start = clock()
        while calls == 0 or clock() - start < min_seconds:
            call()
            calls += 1
        seconds = (clock() - start) / calls
    finally:
        profiler.stop()
    stacks = _own_stacks(profiler.last_session.frame_records)
    trace.parent.mkdir(parents=True, exist_ok=True)
    trace.write_text(json.dumps(chrome_trace(stacks)))
    rows = _python_rows([(stack, t / calls) for stack, t in stacks])
    return CallProfile("python", seconds, tuple(rows[:top]), trace, 0, sum(s for _, s in stacks) / calls, calls)
