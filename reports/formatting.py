"""How numbers read: the Jinja2 filters the templates and the terminal table share."""
from __future__ import annotations

import math

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BYTE_UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def _missing(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def seconds(x: float | None) -> str:
    """0.0123 -> '12.3 ms'."""
    if _missing(x):
        return "—"
    for scale, unit in _TIME_UNITS:
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x / 1e-9:.3g} ns"


def byte_size(x: float | None) -> str:
    """1572864 -> '1.5 MiB'."""
    if _missing(x):
        return "—"
    for scale, unit in _BYTE_UNITS:
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.0f} B"


def rate(x: float | None) -> str:
    """12345.6 -> '12.3k'."""
    if _missing(x):
        return "—"
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def factor(x: float | None) -> str:
    """1.234 -> '1.23x'."""
    return "—" if _missing(x) else f"{x:.2f}x"


def interval(low: float | None, high: float | None) -> str:
    """A ratio interval: '[1.10, 1.40]'."""
    if _missing(low) or _missing(high):
        return ""
    return f"[{low:.2f}, {high:.2f}]"


def percent(x: float | None) -> str:
    return "—" if _missing(x) else f"{x:.0%}"


def verdict_figure(verdict) -> str:
    """The measured figure of a verdict in the claim's own terms."""
    if _missing(verdict.value):
        return "—"
    if verdict.kind == "speedup":
        return f"{factor(verdict.value)} {interval(verdict.low, verdict.high)}".strip()
    if verdict.kind == "throughput":
        return f"{rate(verdict.value)}/s"
    if verdict.kind == "memory_reduction":
        return f"{verdict.value:.0%} less"
    return f"{verdict.value:.4g}"


def css_class(label: str) -> str:
    """A verdict label as a CSS class name."""
    return "v-" + label.replace(" ", "-")


FILTERS = {"seconds": seconds, "byte_size": byte_size, "rate": rate, "factor": factor, "interval": interval,
           "percent": percent, "verdict_figure": verdict_figure, "css_class": css_class}
