"""One round of a paired measurement, as measured and stored: each side's block of calls.

`proofbench.measure.interleave` measures rounds, the sidecar and the database keep them
(`Round.to_dict`), and `proofbench.stats.paired` derives a speedup and its outcome from them,
leaving out the rounds whose two sides did not see like load (`Round.comparable`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

UNEQUAL_LOAD = 0.5  # cores: a round whose two blocks saw other processes' load differ by more is left out
# A load is read from /proc/stat's clock ticks (10 ms each): over a block of d seconds two ticks'
# error is 0.02 / d cores, which the comparison allows for (1 core for a 20 ms block).
TICK_ERROR = 0.02


@dataclass(frozen=True)
class Block:
    """One side's block of calls in a round: how many, their total seconds, and the CPU other
    processes used meanwhile, in cores (None where it could not be read)."""

    calls: int
    seconds: float
    load: float | None = None

    @property
    def per_call(self) -> float:
        return self.seconds / self.calls if self.calls > 0 else math.nan


@dataclass(frozen=True)
class Round:
    """One round of a paired measurement: side a's block, side b's, which ran first, and the
    process that measured it (rounds may come from several)."""

    a: Block
    b: Block
    a_first: bool = True
    process: int = 0

    def comparable(self, heavy: float | None = None) -> bool:
        """Both sides saw like conditions: their loads differ by at most `UNEQUAL_LOAD` cores and,
        given `heavy`, neither exceeds it (a load that takes cores the measured code needs), each
        within the reading's error over the shorter block (`TICK_ERROR`)."""
        la, lb = self.a.load, self.b.load
        if la is None or lb is None:
            return True
        shortest = min(self.a.seconds, self.b.seconds)
        slack = TICK_ERROR / shortest if shortest > 0 else math.inf
        return abs(la - lb) <= UNEQUAL_LOAD + slack and (heavy is None or max(la, lb) <= heavy + slack)

    def to_dict(self) -> dict:
        """The compact form the sidecar and the database keep."""
        return {"a": [self.a.calls, self.a.seconds, self.a.load], "b": [self.b.calls, self.b.seconds, self.b.load],
                "first": "a" if self.a_first else "b", "process": self.process}

    @classmethod
    def from_dict(cls, data: dict) -> "Round":
        """The inverse of `to_dict`; ValueError on a malformed entry."""
        try:
            a, b = (Block(int(x[0]), float(x[1]), None if x[2] is None else float(x[2])) for x in (data["a"], data["b"]))
            return cls(a, b, data.get("first", "a") == "a", int(data.get("process", 0)))
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"malformed round {data!r}: {exc}") from None
