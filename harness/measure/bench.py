"""asv's view of a subject: the base class every generated benchmark class extends.

A generated class (see `proofbench.pipeline.generate`) names its subject; this base class fills in
asv's parameters and measurement attributes from the subject and the active profile,
prepares the workload in `setup`, and exposes the measurements as asv benchmarks:
`time_call` (timed by asv with the synchronising clock), `track_items`, `track_speedup`
(the variant alternated with its baseline in rounds, the answers of the timed calls checked; see
`proofbench.measure.pairing`), `track_peak_memory` and one `track_<measure>` per declared measure.

$PROOFBENCH_MEMORY_LIMIT (bytes, or with a K, M or G suffix) bounds how much address space
each benchmark process may add to what it holds when its first setup starts: a runaway
allocation then fails as MemoryError inside that process instead of pressing on the machine.
A failure is recorded as the exception's type and message; one that ran out of memory says so
first ("out of memory (...): MemoryError: ...").
"""
from __future__ import annotations

import math
import os
import re
import resource
from pathlib import Path
from typing import Any, Callable

import psutil

from proofbench import capability
from proofbench.declare import Context, Subject, Variant, Workload
from proofbench.errors import InputError, Skip
from proofbench.machine.nvml import NvmlSampler
from proofbench.measure import allocator, gpu_watch, pairing, processes, sidecar
from proofbench.measure.memory import PeakMemory
from proofbench.measure.noise import OtherLoad
from proofbench.measure.timer import sync_clock
from proofbench.profile import Profile, get_profile
from proofbench.registry import load, load_module

PARAM_NAMES = ["variant", "size"]
MEMORY_LIMIT_VAR = "PROOFBENCH_MEMORY_LIMIT"
SETUP_CACHE_TIMEOUT = 120.0  # seconds, at least, for asv's setup_cache process
_SIZE = re.compile(r"^\s*([0-9]{1,16})\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
MAX_MEMORY_LIMIT = 2**50  # bytes; setrlimit takes a C long, and no machine has a pebibyte
_OUT_OF_MEMORY = re.compile(r"out of memory|can't allocate memory|cannot allocate memory", re.IGNORECASE)
_MEMORY_LIMITED: list[int] = []  # the limit this process runs under, once set
# asv re-runs setup before every timed sample (asv#966); the prepared workload is kept per
# process so a sample costs one setup check, not a model build. Variants are repeatable by
# contract (see proofbench.declare.Variant), so reusing the inputs observes the same state.
# Beside the workload: the other processes' CPU load and, on a CUDA profile, the GPUs' telemetry.
_WORKLOADS: dict[tuple[str, str, str, str], tuple[Workload, OtherLoad, NvmlSampler | None]] = {}
# The benchmark instance whose class-level setup ran last in this process. asv runs the
# class's setup and then the benchmark's own (`time_call.setup`, see `prepared`) in one
# process, one benchmark at a time; the second needs the first's instance.
_ACTIVE: list["SubjectBenchmark"] = []


def prepared(subject_key: str) -> Callable[..., None]:
    """`time_call`'s own asv setup: prepare the workload before any timing starts.

    Track benchmarks prepare lazily, so those that have nothing to measure for a parameter
    set (items of a non-baseline variant, the speedup of the baseline) cost no model build.
    A Skip raised by `prepare` here makes asv record the timing as skipped.
    """
    def setup(first: str, *rest: str) -> None:
        # At least one positional parameter: asv runs an argument-free setup before the
        # setup_cache, as a module-level hook, and there is no benchmark instance then.
        active = _ACTIVE[-1]
        if active.subject_key != subject_key:
            raise RuntimeError(f"setup order: {subject_key} prepared while {active.subject_key} is active")
        inputs = active.ensure_workload().inputs
        state = active._variant.state
        if state is not None and state.reset is not None:
            state.reset(inputs)  # asv re-runs this setup before every timed call

    return setup


def _set_threads(n: int) -> None:
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n)


def memory_limit(text: str | None) -> int | None:
    """Bytes of $PROOFBENCH_MEMORY_LIMIT's value ("268435456", "256M", "2G"); None when unset."""
    if not text:
        return None
    match = _SIZE.match(text)
    limit = int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2).upper()] if match else 0
    if not 0 < limit <= MAX_MEMORY_LIMIT:
        raise InputError(f"{MEMORY_LIMIT_VAR}={text[:40]!r}: expected a positive number of bytes up to 1 PiB, "
                         f"e.g. 512M or 2G")
    return limit


def _limit_memory() -> None:
    # Once per process: allow the address space held now plus the limit (imports such as
    # torch already reserve gigabytes of address space they never touch).
    limit = memory_limit(os.environ.get(MEMORY_LIMIT_VAR))
    if limit is None or _MEMORY_LIMITED:
        return
    held = psutil.Process().memory_info().vms
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = held + limit if hard == resource.RLIM_INFINITY else min(held + limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    _MEMORY_LIMITED.append(limit)


def failure_reason(exc: BaseException) -> str:
    """How a failed benchmark's reason reads: the exception's type and message, and "out of
    memory" first when that is what it was."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, MemoryError) or _OUT_OF_MEMORY.search(str(exc)):
        bound = f" (limit {os.environ.get(MEMORY_LIMIT_VAR)})" if _MEMORY_LIMITED else ""
        return f"out of memory{bound}: {text}"
    return text


def asv_name(cls: type) -> str:
    """The name asv gives a benchmark class: its module below the suite's package (asv imports the
    benchmark directory as a package named after it: `benchmarks` here, `bench` in a project that
    `proofbench init` set up), then the class."""
    module = cls.__module__.split(".", 1)[1] if "." in cls.__module__ else cls.__module__
    return f"{module}.{cls.__name__}"


class SubjectBenchmark:
    """Base of generated benchmark classes; subclasses set `subject_key` and `version`."""

    subject_key = ""
    subject_module = ""  # the module declaring the subject: a benchmark process imports only it
    param_names = PARAM_NAMES
    timer = staticmethod(sync_clock)
    sample_time = 0.01

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        subject = load_module(cls.subject_module).get(cls.subject_key) if cls.subject_module \
            else load().get(cls.subject_key)
        profile = get_profile()
        cls.params = [[v.name for v in subject.variants], [s for s in profile.sizes]]
        cls.timeout = subject.timeout
        setup_cache = cls.__dict__.get("setup_cache")
        if setup_cache is not None:
            # asv builds the cache in a fresh process that imports the whole suite first; a
            # subject's short timeout must not cut that short.
            setup_cache.timeout = max(subject.timeout, SETUP_CACHE_TIMEOUT)
        cls.rounds = profile.rounds
        cls.repeat = profile.repeat
        cls.warmup_time = profile.warmup_time
        cls.min_run_count = profile.repeat[0]

    # -- asv hooks -------------------------------------------------------------------

    def build_cache(self) -> str:
        """Build the subject's on-disk fixtures in asv's cache directory (the cwd)."""
        subject = self._registry().get(self.subject_key)
        profile = get_profile()
        here = Path.cwd()
        if subject.build_cache is not None:
            subject.build_cache(here, tuple(subject.size(s) for s in profile.sizes))
        return str(here)

    def setup(self, *params: str) -> None:
        # params are (cache_dir, variant, size) with a setup_cache, else (variant, size).
        variant, size = params[-2:]
        self._cache_dir = Path(params[0]) if len(params) == 3 else None
        self._subject: Subject = self._registry().get(self.subject_key)
        self._profile: Profile = get_profile()
        self._variant: Variant = self._subject.variant(variant)
        self._params = (variant, size)
        self._workload: Workload | None = None
        _ACTIVE[:] = [self]
        reason = capability.missing(self._variant.requires, self._profile.device)
        if reason:
            self._note("skipped", reason)
            raise Skip(reason)
        _set_threads(self._profile.torch_threads)
        allocator.steady()
        _limit_memory()

    def _registry(self):
        return load_module(self.subject_module) if self.subject_module else load()

    def ensure_workload(self) -> Workload:
        """The prepared workload of this subject, variant and size (built once per process)."""
        variant, size = self._params
        key = (self.subject_key, variant, size, self._profile.device)
        if key not in _WORKLOADS:
            _WORKLOADS[key] = (self._prepare(variant, size), OtherLoad().__enter__(),
                               gpu_watch.start(self._profile.device))
        self._workload, self._load, self._gpu = _WORKLOADS[key]
        return self._workload

    def _lazy(self) -> Workload | None:
        # A track benchmark cannot be skipped from inside its body; it returns NaN instead.
        try:
            return self.ensure_workload()
        except Skip:
            return None

    def _prepare(self, variant: str, size: str) -> Workload:
        ctx = Context(size=self._subject.size(size), device=self._profile.device, cache_dir=self._cache_dir,
                      threads=self._profile.torch_threads, variant=variant)
        try:
            return self._subject.prepare(ctx)
        except Skip as exc:
            self._note("skipped", str(exc))
            raise
        except Exception as exc:
            self._note("failed", f"setup: {failure_reason(exc)}")
            raise

    def teardown(self, *params: str) -> None:
        # Runs after every sample; the last record of a benchmark covers all its samples.
        load_ = getattr(self, "_load", None)
        if load_ is not None:
            load_.__exit__(None, None, None)
            gpu = getattr(self, "_gpu", None)
            watched = {"gpu": gpu_watch.summary(gpu.telemetry_now())} if gpu is not None else {}
            self._note("ok", method=getattr(self, "_method", None), other_load_cores=load_.cores,
                       busy=load_.busy, threads=self._profile.torch_threads,
                       profile=self._profile.name, device=self._profile.device, **watched)

    # -- measurements ----------------------------------------------------------------

    def call(self) -> Any:
        """Run the variant once on the workload (what `time_call` times)."""
        self._method = "time_call"
        try:
            return self._variant.run(self._workload.inputs)
        except Exception as exc:
            self._note("failed", failure_reason(exc), method="time_call")
            raise

    def items(self) -> float:
        """Items per call: a property of the workload, recorded once, with the baseline."""
        if self._variant.name != "baseline":
            return math.nan
        workload = self._lazy()
        return math.nan if workload is None else float(workload.items)

    def speedup(self) -> float:
        """The variant's speedup over the baseline, both measured in alternating rounds
        (`proofbench.measure.interleave`), with the answers of the timed calls checked: in this
        process, or shared among the profile's `processes`, each forked from this one and
        preparing its own workload (`proofbench.measure.processes`).

        The rounds, the checks and the plan go to the sidecar (see `proofbench.measure.pairing`);
        asv keeps the estimate. NaN for the baseline, the reference.
        """
        if self._variant.name == "baseline":
            return math.nan
        plan = pairing.plan(self._profile, self._subject.key, bound=self._subject.bound)
        if plan.processes == 1 and self._lazy() is None:
            return math.nan
        prepare = self.ensure_workload if plan.processes == 1 else (lambda: self._prepare(*self._params))
        try:
            measured, checked = self._guard("track_speedup", lambda: pairing.measure(
                self._subject, self._variant, prepare, plan, processes.can_fork(self._profile.device)))
        except Skip:
            return math.nan
        verdicts = {"equivalent": checked.equivalent} if checked.equivalent is not None else {}
        self._note("ok" if checked.passed else "failed", pairing.failure(self._subject, checked),
                   method="track_speedup", rounds=pairing.document(plan, measured, checked),
                   threads=self._profile.torch_threads, profile=self._profile.name, device=self._profile.device,
                   **verdicts)
        return pairing.asv_value(measured, plan)

    def peak_memory(self) -> float:
        """Peak bytes of one call above the post-setup level."""
        if self._lazy() is None:
            return math.nan

        def measure() -> float:
            with PeakMemory(self._profile.device) as peak:
                self._variant.run(self._workload.inputs)
            return float(peak.bytes)

        return self._guard("track_peak_memory", measure)

    def measure(self, name: str) -> float:
        """A declared per-variant measure on one call's output."""
        (spec,) = [m for m in self._subject.measures if m.metric.name == name]
        if self._lazy() is None:
            return math.nan
        return self._guard(f"track_{name}", lambda: float(
            spec.measure(self._workload.inputs, self._variant.run(self._workload.inputs))))

    # -- bookkeeping -----------------------------------------------------------------

    def _guard(self, method: str, fn: Callable[[], Any]) -> Any:
        # A variant that raises fails this benchmark alone; the reason goes to the sidecar.
        self._method = method
        try:
            return fn()
        except Skip as exc:  # the variant cannot run here: a skip, not a failure
            self._note("skipped", str(exc), method=method)
            raise
        except Exception as exc:
            self._note("failed", failure_reason(exc), method=method)
            raise

    def _note(self, status: str, reason: str = "", method: str | None = None, **details: object) -> None:
        sidecar.write(asv_name(type(self)), self._params, status, reason, method=method, **details)
