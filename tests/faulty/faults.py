"""Deliberately broken subjects: a variant that raises, hangs, runs out of memory or is killed,
a subject whose input file is malformed, and a sound subject beside them.

Every fault is bounded: the hang sleeps at most `HANG_SECONDS` (asv kills it at the subject's
timeout first), and the allocation stops at `ALLOCATION_CAP` even if no memory limit is set;
without $PROOFBENCH_MEMORY_LIMIT the `exhausts` variant refuses to allocate at all.
"""
from __future__ import annotations

import os
import resource
import signal
import time
from pathlib import Path

from proofbench.declare import Context, Equivalence, Metric, Size, Subject, Variant, Workload
from proofbench.registry import register
from proofbench.subjects.workloads.fasta import read_fasta

TIMEOUT_VAR = "PROOFBENCH_FAULTY_TIMEOUT"  # a test that must catch `hangs` mid-hang raises it
TIMEOUT = float(os.environ.get(TIMEOUT_VAR, "2"))  # seconds asv gives each benchmark process
HANG_SECONDS = 60.0
CHUNK = 16 << 20  # bytes per allocation step of `exhausts`
ALLOCATION_CAP = 2 << 30  # never more than this in total, limit or not
MARKS_VAR = "PROOFBENCH_FAULTY_MARKS"  # a directory where `hangs` leaves its pid when it starts
BROKEN_FASTA = Path(__file__).resolve().parent / "inputs" / "broken.fasta"

SIZES = (Size.of("tiny", n=200), Size.of("small", n=2000), Size.of("large", n=20000))
ABS_DIFF = Metric("abs_diff", "absolute", higher_is_better=False)
SAME_SUM = Equivalence(ABS_DIFF, 0.0, lambda a, b: abs(a - b), description="the same sum")


def _numbers(ctx: Context) -> Workload:
    return Workload(inputs=tuple(range(ctx.size["n"])), items=ctx.size["n"])


def _total(numbers: tuple[int, ...]) -> int:
    return sum(numbers)


def _raises(numbers: tuple[int, ...]) -> int:
    raise ValueError(f"deliberate failure after {len(numbers)} numbers")


def _hangs(numbers: tuple[int, ...]) -> int:
    marks = os.environ.get(MARKS_VAR)
    if marks:
        (Path(marks) / f"hang-{os.getpid()}").write_text(str(os.getpid()))
    time.sleep(HANG_SECONDS)
    return sum(numbers)


def _exhausts(numbers: tuple[int, ...]) -> int:
    # Allocates and touches memory in steps until the process's address-space limit stops it.
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        raise RuntimeError("refusing to exhaust memory without PROOFBENCH_MEMORY_LIMIT")
    held = []
    while len(held) * CHUNK < ALLOCATION_CAP:
        held.append(bytearray(CHUNK))
    return sum(numbers)


def _killed(numbers: tuple[int, ...]) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return sum(numbers)


register(Subject(
    area="loading", name="faulty_variants", item="number",
    description="a baseline beside variants that raise, hang, exhaust memory and are killed",
    prepare=_numbers,
    variants=(
        Variant("baseline", _total, "sums the numbers"),
        Variant("raises", _raises, "raises ValueError"),
        Variant("hangs", _hangs, f"sleeps {HANG_SECONDS:g} s, past the timeout"),
        Variant("exhausts", _exhausts, "allocates until the memory limit stops it"),
        Variant("killed", _killed, "kills its own process with SIGKILL"),
    ),
    equivalence=SAME_SUM, sizes=SIZES, timeout=TIMEOUT,
))


def _broken_input(ctx: Context) -> Workload:
    records = list(read_fasta(BROKEN_FASTA))
    return Workload(inputs=records, items=len(records))


register(Subject(
    area="loading", name="faulty_input", item="record",
    description="a subject whose input FASTA file is malformed: its setup fails",
    prepare=_broken_input,
    variants=(Variant("baseline", len), Variant("optimized", len)),
    equivalence=SAME_SUM, sizes=SIZES, timeout=TIMEOUT,
))

register(Subject(
    area="loading", name="faulty_sound", item="number",
    description="a sound subject run beside the broken ones: its results must all be kept",
    prepare=_numbers,
    variants=(Variant("baseline", _total, "sum()"), Variant("optimized", _total, "sum() again")),
    equivalence=SAME_SUM, sizes=SIZES, timeout=TIMEOUT,
))
