"""Claims: sentences from the seed documents and the figures they promise, as data.

Claims live in subjects/claims.toml; each names the subject and variant it is about, the seed
file it is quoted from, the exact quote, and the promised figure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from proofbench import tomlfile
from proofbench.declare import PEAK_MEMORY, TIME, Subject
from proofbench.errors import DeclarationError, InputError
from proofbench.registry import Registry

KINDS = ("speedup", "throughput", "memory_reduction", "quality")
DEVICES = ("any", "gpu")
ITEMS = "items"  # the metric of a throughput claim: the subject's items per second
_REQUIRED = ("id", "subject", "variant", "source", "quote", "kind", "metric")
_OPTIONAL = ("low", "high", "device", "note")
MAX_NAME = 200  # characters of an id or a source file name (the database's column width)


@dataclass(frozen=True)
class Claim:
    """One promise from a seed document, made checkable.

    `low`/`high` bound the promised figure: a speedup factor (2.0 = twice as fast), a
    throughput in items/s, or a memory reduction as a fraction (0.3 = 30% less).
    Quality claims carry no figure; they are judged by the subject's equivalence check.
    """

    id: str
    subject: str
    variant: str
    source: str
    quote: str
    kind: str
    metric: str
    low: float | None = None
    high: float | None = None
    device: str = "any"
    note: str = ""

    def __post_init__(self) -> None:
        where = _where(self.id)
        if self.kind not in KINDS:
            raise DeclarationError(f"{where}: kind {self.kind!r} must be one of {', '.join(KINDS)}")
        if self.device not in DEVICES:
            raise DeclarationError(f"{where}: device {self.device!r} must be one of {', '.join(DEVICES)}")
        for key in ("id", "source"):
            if len(getattr(self, key)) > MAX_NAME:
                raise DeclarationError(f"{where}: key {key!r} has {len(getattr(self, key))} characters; at most "
                                       f"{MAX_NAME}")
        if self.kind == "quality":
            if self.low is not None or self.high is not None:
                raise DeclarationError(f"{where}: a quality claim carries no figure (the subject's equivalence "
                                       f"check judges it); remove 'low' and 'high'")
            return
        _check_figure(where, self.kind, "low", self.low)
        if self.high is None:
            return
        _check_figure(where, self.kind, "high", self.high)
        if self.high < self.low:
            raise DeclarationError(f"{where}: key 'high' ({self.high:g}) is below 'low' ({self.low:g})")


def _where(claim_id: str) -> str:
    return f"claim {claim_id[:MAX_NAME]!r}"


def _check_figure(where: str, kind: str, key: str, value: object) -> None:
    # A promised figure: a real number (true is not 1.0), finite, and possible for its kind.
    if not math.isfinite(number := _number(value)):
        raise DeclarationError(f"{where}: key {key!r} must be a number (finite; true is not one), "
                               f"got {tomlfile.shown(value)}")
    if kind == "memory_reduction" and not 0 < number < 1:
        raise DeclarationError(f"{where}: key {key!r} is a fraction of memory saved, above 0 and below 1 "
                               f"(0.3 = 30% less), got {tomlfile.shown(value)}")
    if number <= 0:
        what = "speedup factor" if kind == "speedup" else "rate in items/s"
        raise DeclarationError(f"{where}: key {key!r} is a {what} and must be above 0, got {tomlfile.shown(value)}")


def _number(value: object) -> float:
    # NaN for anything that is not a real number a float can hold
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.nan


def load_claims(path: Path) -> tuple[Claim, ...]:
    """Parse a claims file; every error names the file, the claim and the key."""
    data = tomlfile.read(path, "claims file")
    tables = data.get("claim")
    if not isinstance(tables, list):
        raise InputError(f"{path}: expected an array of [[claim]] tables")
    stray = sorted(set(data) - {"claim"})
    if stray:
        raise InputError(f"{path}: unknown top-level key {stray[0]!r}; a claims file holds only [[claim]] tables")
    claims = tuple(_claim(path, i, t) for i, t in enumerate(tables))
    seen: set[str] = set()
    for claim in claims:
        if claim.id in seen:
            raise InputError(f"{path}: claim id {claim.id!r} appears twice")
        seen.add(claim.id)
    return claims


def _as_float(value: object) -> object:
    # An integer figure as a float; anything else as it is, for Claim to refuse
    return float(value) if math.isfinite(_number(value)) else value


def _claim(path: Path, index: int, table: object) -> Claim:
    if not isinstance(table, dict):
        raise InputError(f"{path}: claim #{index + 1}: must be a table ([[claim]]), got {type(table).__name__}")
    where = f"{path}: claim #{index + 1} ({str(table.get('id', 'no id'))[:MAX_NAME]})"
    for key in _REQUIRED:
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise InputError(f"{where}: key {key!r} must be a non-empty string")
    unknown = sorted(set(table) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key in ("device", "note"):
        if not isinstance(table.get(key, ""), str):
            raise InputError(f"{where}: key {key!r} must be a string")
    if table["kind"] != "quality" and "low" not in table:
        raise InputError(f"{where}: a {table['kind']} claim needs 'low' (the promised figure)")
    low = _as_float(table.get("low"))
    high = _as_float(table.get("high", low))
    try:
        return Claim(id=table["id"], subject=table["subject"], variant=table["variant"], source=table["source"],
                     quote=table["quote"], kind=table["kind"], metric=table["metric"], low=low, high=high,
                     device=table.get("device", "any"), note=table.get("note", ""))
    except DeclarationError as exc:
        raise InputError(f"{where}: {str(exc).removeprefix(_where(table['id']) + ': ')}") from None


def check_against(claims: tuple[Claim, ...], registry: Registry, path: Path) -> tuple[Claim, ...]:
    """`claims`, once each is known to name a registered subject, one of its variants and a
    metric the subject measures for the claim's kind."""
    for claim in claims:
        where = f"{path}: claim {claim.id!r}"
        if claim.subject not in registry:
            raise InputError(f"{where}: unknown subject {claim.subject!r}; "
                             f"known: {', '.join(s.key for s in registry) or 'none'}")
        subject = registry.get(claim.subject)
        variants = [v.name for v in subject.variants]
        if claim.variant not in variants:
            raise InputError(f"{where}: subject {claim.subject} has no variant {claim.variant!r}; "
                             f"expected one of {', '.join(variants)}")
        if claim.variant == "baseline" and claim.kind != "throughput":  # a rate is the one figure of its own
            raise InputError(f"{where}: a {claim.kind} claim is about a variant against the baseline, and "
                             f"'baseline' is the baseline itself; expected one of "
                             f"{', '.join(v for v in variants if v != 'baseline')}")
        metrics = metrics_for(claim.kind, subject)
        if claim.metric not in metrics:
            raise InputError(f"{where}: key 'metric' {claim.metric!r} is not measured by {claim.subject} for a "
                             f"{claim.kind} claim; expected {' or '.join(metrics) or 'none (it measures none)'}")
    return claims


def metrics_for(kind: str, subject: Subject) -> tuple[str, ...]:
    """The metrics a claim of `kind` about `subject` can name: time for a speedup, items for a
    throughput, peak memory (where tracked) or a declared measure for a memory reduction, the
    equivalence metric for quality."""
    if kind == "speedup":
        return (TIME.name,)
    if kind == "throughput":
        return (ITEMS,)
    if kind == "quality":
        return (subject.equivalence.metric.name,)
    return ((PEAK_MEMORY.name,) if subject.track_memory else ()) + tuple(m.metric.name for m in subject.measures)
