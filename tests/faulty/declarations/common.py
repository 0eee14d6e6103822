"""What the broken declarations share: sound sizes, an equivalence and a workload."""
from __future__ import annotations

from proofbench.declare import Equivalence, Metric, Size, Workload

SIZES = (Size.of("tiny", n=1), Size.of("small", n=2), Size.of("large", n=3))
SAME = Equivalence(Metric("abs_diff", "absolute", False), 0.0, lambda a, b: abs(a - b))


def prepare(ctx) -> Workload:
    """A one-number workload."""
    return Workload(inputs=ctx.size["n"], items=1)
