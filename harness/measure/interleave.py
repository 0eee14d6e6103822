"""Interleaved rounds: two callables measured alternately in one process, under a time budget.

A round times a block of calls of one side, then a block of the other; which side goes first
alternates from round to round (a b, b a, a b, ...), so a steady drift falls on both sides alike,
and rounds stop at an even count, so each order is measured as often as the other (the side that
goes first in a round follows its own block: `proofbench.stats` removes what that is worth).
Each block records its calls, its seconds and the CPU that other processes used while it ran
(`OtherLoad`), with Python's garbage collector paused as asv's samples have it
(`proofbench.measure.timer.collector_paused`), so a burst of load that hit one side and not the
other can be left out afterwards. Rounds go on until the ratio's interval
(`proofbench.stats.paired`, the same statistic the reports derive from the stored rounds) is
within the plan's precision and decides (it lies above 1, below 1, or within the plan's bound of
no difference, its edges clear of 1 by the variation between runs) and have gone on for the
plan's span, or the budget is spent.

Before the counted rounds, uncounted ones warm both sides for the plan's `warmup` seconds: the
first rounds after a call sized the blocks ran 3-7% off the rest for several subjects here
(bf16 and inference-mode latency, mixed precision training).

The same loop serves a variant against its baseline (`proofbench.measure.bench`) and anything
else that can be called in one process: two prepared workloads, two builds of a function.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from proofbench.measure.noise import OtherLoad
from proofbench.measure.timer import collector_paused, sync_clock
from proofbench.rounds import Block, Round
from proofbench.stats import MIN_ROUNDS, NEAR_ONE, Paired, paired

Clock = Callable[[], float]
LoadProbe = Callable[[], Any]  # a context manager factory whose result has `.cores` after exit


@dataclass(frozen=True)
class Plan:
    """How long and how precisely to measure one pair.

    `budget`: seconds of rounds at most (the warm-up calls are not counted); `precision`: stop
    once the ratio's 95% interval is within +- this fraction of its estimate and, where it holds
    1, within +- this fraction of 1; `min_rounds`: never
    stop before this many rounds are kept; `block`: the seconds one side's block aims at (at least
    one call); `max_rounds`: a bound for calls so fast that the budget alone would allow millions;
    `heavy`: other processes' load, in cores, above which a round is left out (None: none is);
    `processes`: how many processes share the rounds, each with its own preparation (see `part`);
    `warmup`: seconds of uncounted rounds before the counted ones, within the budget;
    `between_runs`: the ratio's standard deviation from one run to the next that these rounds
    cannot show, as a fraction, held by the interval (`proofbench.stats.with_runs`);
    `no_difference`: the widest difference "no significant difference" may leave open (0: the
    precision; `proofbench.stats.paired`); `span`: seconds the counted rounds go on for at
    least, within the budget (a machine state that lasts seconds, a disk's writeback, would
    otherwise set a whole estimate that the precision alone stops after a second or two).
    """

    budget: float = 4.0
    precision: float = 0.05
    min_rounds: int = 8
    block: float = 0.1
    max_rounds: int = 400
    heavy: float | None = None
    processes: int = 1
    warmup: float = 0.0
    between_runs: float = 0.0
    no_difference: float = 0.0
    span: float = 0.0

    def to_dict(self) -> dict[str, float | None]:
        """The plan as stored beside the rounds it produced."""
        return {"budget": self.budget, "precision": self.precision, "min_rounds": self.min_rounds,
                "block": self.block, "max_rounds": self.max_rounds, "heavy": self.heavy,
                "processes": self.processes, "warmup": self.warmup, "between_runs": self.between_runs,
                "no_difference": self.no_difference, "span": self.span}

    def judged(self, rounds: Sequence[Round]) -> Paired:
        """`rounds` as this plan judges them: its precision, minimum rounds, heavy load and
        variation between runs, and the bound of no difference (`proofbench.stats.paired`)."""
        return paired(rounds, self.precision, self.min_rounds, self.heavy, between_runs=self.between_runs,
                      no_difference=self.no_difference)

    def part(self) -> "Plan":
        """One process's part of a plan shared by `processes`: its share of the budget, the span and the
        rounds (never fewer than a t interval needs), and a precision wider by the square root of
        their number, since the processes' rounds together narrow the interval that much."""
        k = self.processes
        return replace(self, budget=self.budget / k, span=self.span / k,
                       min_rounds=max(MIN_ROUNDS, math.ceil(self.min_rounds / k)),
                       precision=self.precision * math.sqrt(k), max_rounds=max(MIN_ROUNDS, self.max_rounds // k),
                       processes=1)


@dataclass(frozen=True)
class Side:
    """One side of a pair: `call` is timed; `before` (a declared reset) runs before every call,
    outside the timed region; `probe` summarises a kept state, read before a block's first
    timed call."""

    call: Callable[[], Any]
    before: Callable[[], None] | None = None
    probe: Callable[[], Any] | None = None


@dataclass(frozen=True)
class Sampled:
    """What one side's timed calls returned, kept for the checks: the warm-up call's output, and
    the last output of its block in the first and in the last round (`round` -1 is the warm-up);
    `states` are the probe's readings before the first and the last round's blocks."""

    outputs: tuple[tuple[int, Any], ...]
    states: tuple[tuple[int, Any], ...] = ()


@dataclass(frozen=True)
class Measured:
    """The rounds of one pair, and what each side's timed calls returned."""

    rounds: tuple[Round, ...]
    a: Sampled
    b: Sampled
    seconds: float  # wall time of the rounds


def _calls(per_call: float, block: float) -> int:
    # enough calls for one block to take about `block` seconds
    return max(1, int(round(block / per_call))) if per_call > 0 else 1


def _block(side: Side, calls: int, clock: Clock, load: LoadProbe) -> tuple[Block, Any, Any]:
    out = state = None
    with load() as seen, collector_paused():
        if side.before is None:
            state = side.probe() if side.probe is not None else None
            start = clock()
            for _ in range(calls):
                out = side.call()
            seconds = clock() - start
        else:
            seconds = 0.0
            for i in range(calls):
                side.before()
                if i == 0 and side.probe is not None:
                    state = side.probe()
                start = clock()
                out = side.call()
                seconds += clock() - start
    return Block(calls, seconds, seen.cores), out, state


def _done(rounds: list[Round], plan: Plan, spent: float) -> bool:
    if len(rounds) % 2:  # each order as often as the other
        return False
    if spent >= plan.budget or len(rounds) >= plan.max_rounds:
        return True
    if spent < plan.span:
        return False
    summary = plan.judged(rounds)
    return (summary.kept >= plan.min_rounds and summary.ratio.half_width <= plan.precision
            and summary.why not in NEAR_ONE)


def _warm(side: Side, clock: Clock) -> tuple[float, Any]:
    if side.before is not None:
        side.before()
    start = clock()
    out = side.call()
    return clock() - start, out


def _round(a: Side, b: Side, i: int, calls: list[int], clock: Clock,
           load: LoadProbe) -> tuple[Round, list[Any]]:
    # round i: a first in even rounds, b first in odd ones
    order = (0, 1) if i % 2 == 0 else (1, 0)
    blocks: list[Any] = [None, None]
    for side in order:
        blocks[side] = _block((a, b)[side], calls[side], clock, load)
    return Round(blocks[0][0], blocks[1][0], a_first=order[0] == 0), blocks


def alternate(a: Side, b: Side, plan: Plan, *, clock: Clock = sync_clock, load: LoadProbe = OtherLoad) -> Measured:
    """Measure `a` and `b` in alternating rounds; see the module docstring.

    One warm-up call of each side comes first (its time sizes the first blocks; its output is
    kept), then uncounted rounds for `plan.warmup` seconds; the blocks are sized again on the
    steady calls of the last uncounted round, or of the first counted one (a first call is often
    slow: lazy setup). A side whose call raises stops the measurement: the exception propagates.
    """
    warm = [_warm(a, clock), _warm(b, clock)]
    calls = [_calls(seconds, plan.block) for seconds, _ in warm]
    kept: list[list[tuple[int, Any]]] = [[(-1, warm[0][1])], [(-1, warm[1][1])]]
    states: list[list[tuple[int, Any]]] = [[], []]
    start = clock()
    warming = 0
    while clock() - start < plan.warmup or warming % 2:
        steady, _ = _round(a, b, warming, calls, clock, load)
        warming += 1
    if warming:
        calls = [_calls(block.per_call, plan.block) for block in (steady.a, steady.b)]
    rounds: list[Round] = []
    while True:
        i = len(rounds)
        counted, blocks = _round(a, b, i, calls, clock, load)
        rounds.append(counted)
        last = _done(rounds, plan, clock() - start)
        for side in (0, 1):
            if i == 0 or last:
                kept[side].append((i, blocks[side][1]))
                if (a, b)[side].probe is not None:
                    states[side].append((i, blocks[side][2]))
        if last:
            break
        if i == 0 and not warming:
            calls = [_calls(block.per_call, plan.block) for block in (counted.a, counted.b)]
    seconds = clock() - start
    return Measured(tuple(rounds), *(Sampled(tuple(kept[s]), tuple(states[s])) for s in (0, 1)), seconds)
