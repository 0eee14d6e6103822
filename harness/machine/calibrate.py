"""This machine's measured limits: dense matmul operations per second per dtype, and memory bandwidth.

A calibration times square matmuls (n x n @ n x n, 2n^3 operations) in every dtype the machine
runs (float32, bfloat16, float16, and int8 through `torch._int_mm` where the build has it) at
a few sizes (`default_sizes`: larger on a GPU), each `repeats` times after a warm-up call, and
one large tensor copy (bytes read plus bytes written). Raw seconds are kept; a peak is the best
rate over sizes and repeats, with the spread of the repeats at that size beside it. A dtype the
machine cannot run is recorded with the reason, never left out silently.

The thread count is part of the result: one thread and every core are different peaks, so a
calibration runs at the thread count of the run profile whose results it is set against.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable

from proofbench.errors import DeclarationError, InputError
from proofbench.measure.noise import OtherLoad
from proofbench.measure.timer import sync_clock

FORMAT_VERSION = 1
DTYPES = ("float32", "bfloat16", "float16", "int8")
SIZES = (256, 512, 1024)  # a CPU's peak is reached by n = 1024
# A GPU's is not: on an H100 (torch 2.11, CUDA 13) n = 1024 gave 14 bf16 TFLOP/s (repeats 61% apart,
# launch-bound) where n = 8192 gave 782, and 26 fp32 TFLOP/s where n = 8192 gave 51.
GPU_SIZES = (2048, 4096, 8192)
REPEATS = 5
COPY_BYTES = 256 * 2**20  # well past any last-level cache, so the copy runs from memory
MAX_CALL_SECONDS = 1.0  # a size expected to take longer than this per call is not tried
_KINDS = ("matmul", "copy")


@dataclass(frozen=True)
class Timing:
    """One operation timed `repeats` times: `work` operations (matmul) or bytes moved (copy) per call."""

    kind: str
    dtype: str
    size: int  # n of the n x n matmul; bytes of the copied tensor
    work: float
    seconds: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise DeclarationError(f"timing: kind must be one of {', '.join(_KINDS)}, got {self.kind!r}")

    @property
    def rates(self) -> tuple[float, ...]:
        """Work per second of each repeat."""
        return tuple(self.work / s for s in self.seconds if s > 0)


@dataclass(frozen=True)
class Peak:
    """The best rate measured, at which size, and how the repeats at that size spread."""

    rate: float
    size: int
    median: float
    slowest: float
    repeats: int

    @property
    def spread(self) -> float:
        """How far the slowest repeat fell below the best, as a share of the best."""
        return (self.rate - self.slowest) / self.rate if self.rate else 0.0


def _peak(timings: list[Timing]) -> Peak | None:
    usable = [t for t in timings if t.rates]
    if not usable:
        return None
    best = max(usable, key=lambda t: max(t.rates))
    rates = best.rates
    return Peak(max(rates), best.size, statistics.median(rates), min(rates), len(rates))


@dataclass(frozen=True)
class Calibration:
    """A machine's peaks at one device and thread count, from the raw timings kept in `timings`."""

    device: str
    threads: int
    torch_version: str
    timings: tuple[Timing, ...]
    unavailable: dict[str, str]  # dtype (or "copy") -> why it was not measured
    other_load_cores: float | None = None  # CPU other processes used meanwhile: a busy machine lowers peaks

    def peak(self, dtype: str) -> Peak | None:
        """The matmul peak of `dtype` (operations per second), or None when it was not measured."""
        return _peak([t for t in self.timings if t.kind == "matmul" and t.dtype == dtype])

    @property
    def bandwidth(self) -> Peak | None:
        """The copy's peak in bytes per second (read plus written), or None when not measured."""
        return _peak([t for t in self.timings if t.kind == "copy"])

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes with a matmul peak, in DTYPES order."""
        return tuple(d for d in DTYPES if self.peak(d) is not None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict with a format version; `from_dict` reads it back."""
        return {"format": FORMAT_VERSION, "device": self.device, "threads": self.threads,
                "torch_version": self.torch_version, "unavailable": dict(self.unavailable),
                "other_load_cores": self.other_load_cores,
                "timings": [{"kind": t.kind, "dtype": t.dtype, "size": t.size, "work": t.work,
                             "seconds": list(t.seconds)} for t in self.timings]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Calibration":
        """The inverse of `to_dict`; InputError names a wrong version or field."""
        if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
            raise InputError(f"calibration: field 'format' is {data.get('format') if isinstance(data, dict) else data!r}; "
                             f"expected {FORMAT_VERSION}")
        try:
            timings = tuple(Timing(t["kind"], t["dtype"], int(t["size"]), float(t["work"]),
                                   tuple(float(s) for s in t["seconds"])) for t in data["timings"])
            return cls(data["device"], int(data["threads"]), data["torch_version"], timings,
                       dict(data["unavailable"]), data.get("other_load_cores"))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"calibration: missing or malformed field ({exc})") from None


def _operands(torch: Any, dtype: str, n: int, device: str) -> tuple[Any, Any, Callable[[Any, Any], Any]]:
    generator = torch.Generator(device=device).manual_seed(n)
    if dtype == "int8":
        a, b = (torch.randint(-64, 64, (n, n), dtype=torch.int8, device=device, generator=generator)
                for _ in range(2))
        return a, b, torch._int_mm
    a, b = (torch.randn(n, n, device=device, generator=generator).to(getattr(torch, dtype)) for _ in range(2))
    return a, b, torch.mm


def _times(fn: Callable[[], Any], repeats: int, clock: Callable[[], float]) -> tuple[float, ...]:
    fn()  # warm-up: first-call allocation and kernel selection are not the machine's peak
    out = []
    for _ in range(repeats):
        start = clock()
        fn()
        out.append(clock() - start)
    return tuple(out)


def _matmuls(torch: Any, dtype: str, device: str, sizes: tuple[int, ...], repeats: int,
             clock: Callable[[], float], max_call_seconds: float) -> list[Timing]:
    out = []
    for n, following in zip(sizes, (*sizes[1:], None)):
        a, b, op = _operands(torch, dtype, n, device)
        seconds = _times(lambda: op(a, b), repeats, clock)
        out.append(Timing("matmul", dtype, n, 2.0 * n**3, seconds))
        if following is not None and min(seconds) * (following / n) ** 3 > max_call_seconds:
            break  # a slow dtype (float16 on most CPUs): the next size would take too long per call
    return out


def _copy(torch: Any, device: str, nbytes: int, repeats: int, clock: Callable[[], float]) -> Timing:
    source = torch.ones(nbytes // 4, dtype=torch.float32, device=device)  # written, so its pages exist
    target = torch.empty_like(source)
    seconds = _times(lambda: target.copy_(source), repeats, clock)
    return Timing("copy", "bytes", source.nbytes, 2.0 * source.nbytes, seconds)


def _unsupported(torch: Any, dtype: str, device: str) -> str | None:
    # A tiny product first: a dtype the build or the device lacks fails here, with its own words.
    if dtype == "int8" and not hasattr(torch, "_int_mm"):
        return "not available here: this torch build has no torch._int_mm"
    if dtype == "bfloat16" and device == "cuda" and not torch.cuda.is_bf16_supported():
        return "not available here: this GPU has no bf16 support"
    try:
        a, b, op = _operands(torch, dtype, 32, device)
        op(a, b)
    except (RuntimeError, NotImplementedError) as exc:
        return f"not available here: {str(exc).splitlines()[0]}"
    return None


def default_sizes(device: str) -> tuple[int, ...]:
    """The matrix sizes a calibration on `device` times when none are given: `GPU_SIZES` on CUDA,
    `SIZES` elsewhere."""
    return GPU_SIZES if device == "cuda" else SIZES


def calibrate(device: str = "cpu", threads: int = 1, *, dtypes: tuple[str, ...] = DTYPES,
              sizes: tuple[int, ...] | None = None, repeats: int = REPEATS, copy_bytes: int = COPY_BYTES,
              max_call_seconds: float = MAX_CALL_SECONDS, clock: Callable[[], float] = sync_clock) -> Calibration:
    """Measure this machine's matmul peak per dtype and its copy bandwidth at `threads` torch threads
    (`sizes` None: `default_sizes(device)`)."""
    import torch

    if sizes is None:
        sizes = default_sizes(device)

    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown or repeats < 1 or not sizes or threads < 1:
        raise DeclarationError(f"calibrate: dtypes must be among {', '.join(DTYPES)}, repeats >= 1, threads >= 1 "
                               f"and sizes non-empty; got dtypes={dtypes}, repeats={repeats}, threads={threads}")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    timings: list[Timing] = []
    unavailable: dict[str, str] = {}
    try:
        with OtherLoad() as load:
            for dtype in dtypes:
                reason = _unsupported(torch, dtype, device)
                if reason:
                    unavailable[dtype] = reason
                else:
                    timings += _matmuls(torch, dtype, device, sizes, repeats, clock, max_call_seconds)
            timings.append(_copy(torch, device, copy_bytes, repeats, clock))
    finally:
        torch.set_num_threads(before)
    return Calibration(device, threads, torch.__version__, tuple(timings), unavailable, load.cores)
