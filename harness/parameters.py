"""Parameter combinations of asv benchmarks: the order they are listed in, everywhere they are listed.

asv stores each parameter value as the text of its repr (`100`, `'d'` stored as `d`), so a plain
sort would put `size=1000` before `size=200`. `order` compares position by position: values that
read as finite numbers by their value and before the others, the others as text.
"""
from __future__ import annotations

import math
from collections.abc import Iterable


def order(values: Iterable[object]) -> tuple[tuple[int, float, str], ...]:
    """The sort key of one combination's values, in the benchmark's parameter order."""
    return tuple((0, float(text), "") if _numeric(text) else (1, 0.0, text) for text in map(str, values))


def _numeric(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
