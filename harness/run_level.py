"""A timing run's level: the one number a run of raw samples stands for when commits are told apart.

Used wherever commits are compared by timings: the change points of a history
(`proofbench.analysis.series.Series.levels`) and the rounds measured again for a confirmation,
a bisection or the pull-request gate (`proofbench.pipeline.remeasure`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

RUN_LEVEL_QUANTILE = 0.1  # of a timing run's raw samples: the run's level when commits are told apart
RUN_LEVEL_MIN_SAMPLES = 3


def run_level(value: float | None, samples: Sequence[float] | None) -> float | None:
    """A timing run's level for telling commits apart (change points, confirmation, bisection):
    the 10% quantile of its raw samples where it has at least 3 finite positive ones, else its
    value (asv's median). Other work on a shared machine only ever adds time to a call, and a
    burst of it long enough to move a run's median moves the low tail of its samples least, so
    a run hit by load reads as the level it is, not as a step. None stays None."""
    if value is None:
        return None
    kept = [x for x in samples or () if x is not None and math.isfinite(x) and x > 0]
    if len(kept) < RUN_LEVEL_MIN_SAMPLES:
        return value
    return float(np.quantile(kept, RUN_LEVEL_QUANTILE))
