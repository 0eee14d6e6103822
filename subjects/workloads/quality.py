"""Quality drift: how far a variant's embeddings moved from the baseline's.

Embeddings are compared row by row (one row per sentence or protein). `min_cosine` is the
worst row's cosine similarity, so one badly damaged sentence cannot hide behind a good
average; `mean_cosine` is the average, reported beside it; `max_abs_diff` is the largest
element-wise difference, for variants that should give the same numbers up to float
rounding. A shape mismatch is never "close": it raises EquivalenceError naming both shapes.
"""
from __future__ import annotations

import torch

from proofbench.declare import Metric
from proofbench.errors import EquivalenceError

# Half precision keeps about 3 significant digits; an embedding turned by more than 2.6
# degrees (cosine 0.999) from fp32 is a changed answer, not rounding: the seeds promise
# "minimal impact" on quality.
HALF_PRECISION_COSINE = 0.999
# int8's "slight impact": each embedding keeps a cosine of at least 0.99 to fp32 (turned by at
# most 8 degrees); below that, nearest-neighbour results built on the embeddings start to change.
SLIGHT_IMPACT_COSINE = 0.99
# Same numbers up to float32 summation order: shapes differ between variants (padding,
# batch size), which moves results by ~1e-6; 1e-4 is far below any real change.
REORDER_TOLERANCE = 1e-4

MIN_COSINE = Metric("min_cosine", "cosine", higher_is_better=True)
MEAN_COSINE = Metric("mean_cosine", "cosine", higher_is_better=True)
MAX_ABS_DIFF = Metric("max_abs_diff", "abs", higher_is_better=False)


def _pair(expected: torch.Tensor, got: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # Compare in float32 on the CPU whatever precision or device produced the rows.
    if tuple(expected.shape) != tuple(got.shape):
        raise EquivalenceError(f"embeddings differ in shape: expected {tuple(expected.shape)}, "
                               f"got {tuple(got.shape)}")
    if expected.dim() != 2 or expected.shape[0] == 0:
        raise EquivalenceError(f"embeddings must be a non-empty (rows, features) matrix, "
                               f"got shape {tuple(expected.shape)}")
    return expected.detach().float().cpu(), got.detach().float().cpu()


def cosine_rows(expected: torch.Tensor, got: torch.Tensor) -> torch.Tensor:
    """The cosine similarity of each row of `got` with the same row of `expected`."""
    a, b = _pair(expected, got)
    return torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-12)


def min_cosine(expected: torch.Tensor, got: torch.Tensor) -> float:
    """The lowest per-row cosine similarity (1.0 = every row points the same way)."""
    return float(cosine_rows(expected, got).min())


def mean_cosine(expected: torch.Tensor, got: torch.Tensor) -> float:
    """The average per-row cosine similarity."""
    return float(cosine_rows(expected, got).mean())


def max_abs_diff(expected: torch.Tensor, got: torch.Tensor) -> float:
    """The largest absolute element-wise difference (0.0 = identical numbers)."""
    a, b = _pair(expected, got)
    return float((a - b).abs().max())
