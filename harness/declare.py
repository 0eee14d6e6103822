"""The declaration API: what a subject is, as frozen data validated at construction.

A subject module builds `Subject` values and hands them to `proofbench.registry.register`.
Nothing here times anything: asv does the measuring (see `proofbench.measure.bench`).
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from proofbench.capability import CAPABILITIES
from proofbench.errors import DeclarationError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# Every subject declares these sizes; profiles pick among them (tiny: tests and smoke runs).
SIZE_NAMES = ("tiny", "small", "large")
# What limits a subject: arithmetic (its FLOP/s is set against the machine's matmul peak) or
# moving data (its bytes/s against the machine's memory bandwidth).
BOUNDS = ("compute", "data")


@dataclass(frozen=True)
class Metric:
    """A measured quantity: its name, unit, and which direction is better."""

    name: str
    unit: str
    higher_is_better: bool

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise DeclarationError(f"metric {self.name!r}: name must match {_NAME.pattern}")

    def better(self, a: float, b: float) -> bool:
        """True when `a` is better than `b` for this metric."""
        return a > b if self.higher_is_better else a < b


TIME = Metric("time", "seconds", higher_is_better=False)
PEAK_MEMORY = Metric("peak_memory", "bytes", higher_is_better=False)
SPEEDUP = Metric("speedup", "x", higher_is_better=True)  # a variant's, from rounds alternated with its baseline


@dataclass(frozen=True)
class Size:
    """A named workload size; `settings` are the knobs the subject's `prepare` reads."""

    name: str
    settings: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, name: str, **settings: Any) -> "Size":
        return cls(name, tuple(sorted(settings.items())))

    def __getitem__(self, key: str) -> Any:
        for k, v in self.settings:
            if k == key:
                return v
        raise KeyError(f"size {self.name!r} has no setting {key!r}")

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


@dataclass(frozen=True)
class Context:
    """Where and how a workload runs: passed to `Subject.prepare`.

    `variant` is the variant this process measures: `prepare` may leave out what only other
    variants need (a compiled model, a quantized copy), but the baseline must always be able
    to run on the inputs it returns, since the equivalence check runs both.
    """

    size: Size
    device: str  # "cpu" or "cuda"
    cache_dir: Path | None  # on-disk fixtures built by `Subject.build_cache` (None without one)
    threads: int
    variant: str = "baseline"


@dataclass(frozen=True)
class Workload:
    """What `prepare` returns: the inputs every variant receives and the items per call."""

    inputs: Any
    items: int


@dataclass(frozen=True)
class State:
    """What a variant keeps across calls (a cache), declared so it is measured as promised.

    `probe(inputs)` summarises the kept state (entries in a cache, say) as a comparable value.
    With `reset`, every timed call starts from the state `reset(inputs)` restores (it runs
    before each call, outside the timed region); without it, every timed call starts from the
    state the first call left (a warm cache). The harness reads `probe` before the timed calls
    it samples: a state that moves between them breaks the promise and is reported.
    """

    description: str
    probe: Callable[[Any], Any]
    reset: Callable[[Any], None] | None = None


@dataclass(frozen=True)
class Part:
    """One optimization of a whole pipeline, and the subject variant that measures it alone.

    A pipeline subject (one seed system end to end) declares its parts; each of its variants
    names the parts it turns on. `subject` and `variant` name the per-part subject's variant
    that turns this part on by itself ("training.mixed_precision", "bf16"), so the product of
    the parts' speedups can be set beside the whole's. `left_out` says why the pipeline's
    whole leaves the part out everywhere (GPU-only, or in conflict with another part); empty
    when the whole turns it on.
    """

    name: str
    subject: str
    variant: str
    description: str = ""
    requires: tuple[str, ...] = ()
    left_out: str = ""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise DeclarationError(f"part {self.name!r}: name must match {_NAME.pattern}")
        if self.subject.count(".") != 1 or not all(_NAME.match(x) for x in self.subject.split(".")):
            raise DeclarationError(f"part {self.name!r}: subject must be 'area.name', got {self.subject!r}")


@dataclass(frozen=True)
class Variant:
    """One way of doing the subject's work. `run(inputs)` returns the output to compare.

    `run` is called many times on the same inputs; it must leave them able to give the
    same answer next time (a training variant restores its starting weights itself). A
    variant that keeps state across calls on purpose (a cache) declares it as `state`.

    `requires` names capabilities (see `proofbench.capability`), such as "cuda"; a variant
    whose requirement is missing is skipped with the reason, never faked. `parts` names the
    parts of a pipeline subject (see `Part`) that this variant turns on.
    """

    name: str
    run: Callable[[Any], Any]
    description: str = ""
    requires: tuple[str, ...] = ()
    state: State | None = None
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise DeclarationError(f"variant {self.name!r}: name must match {_NAME.pattern}")
        unknown = [r for r in self.requires if r not in CAPABILITIES]
        if unknown:
            raise DeclarationError(
                f"variant {self.name!r}: unknown requirement(s) {', '.join(unknown)}; "
                f"expected one of {', '.join(sorted(CAPABILITIES))}"
            )


@dataclass(frozen=True)
class Equivalence:
    """How close a variant's output must be to the baseline's.

    `compare(baseline_output, variant_output)` returns a number in `metric`'s unit;
    the variant is equivalent when that number is on the good side of `tolerance`.
    """

    metric: Metric
    tolerance: float
    compare: Callable[[Any, Any], float]
    description: str = ""

    def passes(self, value: float) -> bool:
        """True when a comparison result `value` is within tolerance."""
        return within_tolerance(value, self.tolerance, self.metric.higher_is_better)


def within_tolerance(value: float, tolerance: float, higher_is_better: bool) -> bool:
    """True when `value` is on the good side of `tolerance` (NaN never is)."""
    if value != value:
        return False
    return value >= tolerance if higher_is_better else value <= tolerance


@dataclass(frozen=True)
class Measure:
    """A per-variant number other than time (padded tokens, model bytes...).

    `measure(workload_inputs, output)` is evaluated once per variant on one call's output.
    `rate` marks a count per call (tokens) that the report also shows per second.
    """

    metric: Metric
    measure: Callable[[Any, Any], float]
    rate: bool = False


@dataclass(frozen=True)
class Subject:
    """One optimization claim made runnable: a workload and two or more variants.

    The first variant named `baseline` is the reference every other variant is compared
    with. `bound` says what limits the work, "compute" or "data"; a data-bound subject
    declares `bytes_moved(workload_inputs, output)`, the bytes one call reads and writes,
    so its bytes/s can be set against the machine's measured memory bandwidth. `workload_version` must change whenever the work itself changes (sizes, data,
    model shapes) so asv history stays comparable; a variant's implementation may change
    freely without it.
    """

    area: str
    name: str
    item: str
    description: str
    prepare: Callable[[Context], Workload]
    variants: tuple[Variant, ...]
    equivalence: Equivalence
    sizes: tuple[Size, ...]
    workload_version: int = 1
    build_cache: Callable[[Path, tuple[Size, ...]], None] | None = None
    measures: tuple[Measure, ...] = ()
    track_memory: bool = False
    timeout: float = 120.0
    notes: str = ""
    bound: str = "compute"
    bytes_moved: Callable[[Any, Any], float] | None = None
    parts: tuple[Part, ...] = ()

    def __post_init__(self) -> None:
        where = f"subject {self.area}.{self.name}"
        if not _NAME.match(self.area):
            raise DeclarationError(f"{where}: area must match {_NAME.pattern} (it names a module of the suite)")
        if not _NAME.match(self.name):
            raise DeclarationError(f"{where}: name must match {_NAME.pattern}")
        names = [v.name for v in self.variants]
        if "baseline" not in names:
            raise DeclarationError(f"{where}: no variant named 'baseline' (variants: {', '.join(names) or 'none'})")
        if len(set(names)) != len(names):
            raise DeclarationError(f"{where}: duplicate variant names in {names}")
        if len(names) < 2:
            raise DeclarationError(f"{where}: needs a baseline and at least one other variant")
        declared = [s.name for s in self.sizes]
        if len(set(declared)) != len(declared):  # asv would measure the first of them only
            raise DeclarationError(f"{where}: duplicate size names in {declared}")
        size_names = set(declared)
        if not set(SIZE_NAMES) <= size_names:
            missing = ", ".join(n for n in SIZE_NAMES if n not in size_names)
            raise DeclarationError(f"{where}: must declare sizes {', '.join(SIZE_NAMES)}; missing {missing}")
        self._check_signatures(where)
        if self.bound not in BOUNDS:
            raise DeclarationError(f"{where}: bound must be one of {', '.join(BOUNDS)}, got {self.bound!r}")
        if self.bound == "data" and self.bytes_moved is None:
            raise DeclarationError(f"{where}: a data-bound subject must declare bytes_moved(inputs, output)")
        metric_names = [m.metric.name for m in self.measures]
        if len(set(metric_names)) != len(metric_names):
            raise DeclarationError(f"{where}: duplicate measure names {metric_names}")
        self._check_parts(where)

    def _check_parts(self, where: str) -> None:
        declared = [p.name for p in self.parts]
        if len(set(declared)) != len(declared):
            raise DeclarationError(f"{where}: duplicate part names in {declared}")
        for variant in self.variants:
            unknown = [p for p in variant.parts if p not in declared]
            if unknown:
                raise DeclarationError(f"{where}: variant {variant.name!r} turns on unknown part(s) "
                                       f"{', '.join(unknown)}; declared: {', '.join(declared) or 'none'}")
        named = self.variant("baseline").parts
        if named:
            raise DeclarationError(f"{where}: the baseline turns every part off; it names {', '.join(named)}")

    def _check_signatures(self, where: str) -> None:
        expected = _arity(self.variants[0].run)
        for variant in self.variants:
            got = _arity(variant.run)
            if got != expected or got != 1:
                raise DeclarationError(
                    f"{where}: variant {variant.name!r} takes {got} positional argument(s); "
                    f"every variant must take exactly one (the workload inputs)"
                )

    @property
    def key(self) -> str:
        """The registry key, `area.name`."""
        return f"{self.area}.{self.name}"

    def variant(self, name: str) -> Variant:
        """The variant called `name`, or a DeclarationError listing the allowed names."""
        for v in self.variants:
            if v.name == name:
                return v
        allowed = ", ".join(v.name for v in self.variants)
        raise DeclarationError(f"subject {self.key}: no variant {name!r}; expected one of {allowed}")

    def size(self, name: str) -> Size:
        """The size called `name`, or a DeclarationError listing the allowed names."""
        for s in self.sizes:
            if s.name == name:
                return s
        allowed = ", ".join(s.name for s in self.sizes)
        raise DeclarationError(f"subject {self.key}: no size {name!r}; expected one of {allowed}")


def _arity(fn: Callable[..., Any]) -> int:
    # Count required positional parameters; variants share one calling convention.
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return -1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in sig.parameters.values() if p.kind in kinds and p.default is p.empty)
