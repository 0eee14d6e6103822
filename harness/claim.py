"""Claims: sentences from the seed documents and the figures they promise, as data.

Claims live in subjects/claims.toml; each names the subject and variant it is about, the seed
file it is quoted from, the exact quote, and the promised figure.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from proofbench.errors import InputError
from proofbench.registry import Registry

KINDS = ("speedup", "throughput", "memory_reduction", "quality")
DEVICES = ("any", "gpu")
_REQUIRED = ("id", "subject", "variant", "source", "quote", "kind", "metric")
_OPTIONAL = ("low", "high", "device", "note")


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



def load_claims(path: Path) -> tuple[Claim, ...]:
    """Parse a claims file; every error names the file, the claim and the key."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: claims file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    tables = data.get("claim")
    if not isinstance(tables, list):
        raise InputError(f"{path}: expected an array of [[claim]] tables")
    claims = tuple(_claim(path, i, t) for i, t in enumerate(tables))
    seen: set[str] = set()
    for claim in claims:
        if claim.id in seen:
            raise InputError(f"{path}: claim id {claim.id!r} appears twice")
        seen.add(claim.id)
    return claims


def _claim(path: Path, index: int, table: dict) -> Claim:
    where = f"{path}: claim #{index + 1} ({table.get('id', 'no id')})"
    for key in _REQUIRED:
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise InputError(f"{where}: key {key!r} must be a non-empty string")
    unknown = sorted(set(table) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}")
    if table["kind"] not in KINDS:
        raise InputError(f"{where}: kind {table['kind']!r} must be one of {', '.join(KINDS)}")
    if table.get("device", "any") not in DEVICES:
        raise InputError(f"{where}: device must be one of {', '.join(DEVICES)}")
    for key in ("low", "high"):
        if key in table and not isinstance(table[key], (int, float)):
            raise InputError(f"{where}: key {key!r} must be a number")
    if table["kind"] != "quality" and "low" not in table:
        raise InputError(f"{where}: a {table['kind']} claim needs 'low' (the promised figure)")
    low = float(table["low"]) if "low" in table else None
    high = float(table["high"]) if "high" in table else low
    if low is not None and high is not None and high < low:
        raise InputError(f"{where}: 'high' ({high}) is below 'low' ({low})")
    return Claim(id=table["id"], subject=table["subject"], variant=table["variant"], source=table["source"],
                 quote=table["quote"], kind=table["kind"], metric=table["metric"], low=low, high=high,
                 device=table.get("device", "any"), note=table.get("note", ""))


def check_against(claims: tuple[Claim, ...], registry: Registry, path: Path) -> tuple[Claim, ...]:
    """`claims`, once each is known to name a registered subject and one of its variants."""
    for claim in claims:
        if claim.subject not in registry:
            raise InputError(f"{path}: claim {claim.id!r}: unknown subject {claim.subject!r}; "
                             f"known: {', '.join(s.key for s in registry) or 'none'}")
        variants = [v.name for v in registry.get(claim.subject).variants]
        if claim.variant not in variants:
            raise InputError(f"{path}: claim {claim.id!r}: subject {claim.subject} has no variant {claim.variant!r}; "
                             f"expected one of {', '.join(variants)}")
    return claims
