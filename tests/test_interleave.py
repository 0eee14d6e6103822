"""Interleaved rounds on a simulated machine: a fake clock, calls whose duration depends on the load
of the moment, and the load probe reading the same trace. Exact, so the rules are tested exactly."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from proofbench.measure.interleave import Plan, Side, alternate
from proofbench.measure.timer import collector_paused
from proofbench.stats import Difference, Why, paired

STEP = 0.001  # seconds of simulated time per step


class Machine:
    """Simulated time: a call needs `work` seconds on a quiet machine, `slowdown` times more while
    other processes load it. `load(t, side)` says how many cores they take at time t while `side`
    runs."""

    def __init__(self, load, slowdown: float = 1.3) -> None:
        self.now = 0.0
        self.running = ""
        self._load = load
        self._slowdown = slowdown

    def clock(self) -> float:
        return self.now

    def call(self, side: str, work: float, answer=None):
        def run():
            self.running, left = side, work
            while left > 1e-9:
                left -= STEP / (1 + (self._slowdown - 1) * self._load(self.now, side))
                self.now += STEP
            return answer if answer is not None else side
        return run

    def probe(self):
        machine = self

        class Seen:
            cores = None

            def __enter__(self):
                self.start = machine.now
                return self

            def __exit__(self, *exc):
                times = np.arange(self.start, machine.now, STEP)
                self.cores = float(np.mean([machine._load(t, machine.running) for t in times])) if len(times) else 0.0

        return Seen()


def on_off_trace(seed: int, seconds: float = 120.0):
    """One busy process, on for 2-4 s, off for 2-4 s, for the whole run."""
    rng = np.random.default_rng(seed)
    edges, t, on = [], rng.uniform(0, 3), True
    while t < seconds:
        length = rng.uniform(2, 4)
        if on:
            edges.append((t, t + length))
        t, on = t + length, not on
    return lambda now, side: 1.0 if any(a <= now < b for a, b in edges) else 0.0


def _measure(machine: Machine, plan: Plan, work=(0.024, 0.015)):
    a, b = Side(machine.call("a", work[0])), Side(machine.call("b", work[1]))
    measured = alternate(a, b, plan, clock=machine.clock, load=machine.probe)
    return measured, paired(measured.rounds, plan.precision, plan.min_rounds, plan.heavy)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_load_that_comes_and_goes_leaves_the_speedup_and_its_verdict_alone(seed):
    plan = Plan(budget=20.0, precision=0.01, min_rounds=8, block=0.1)
    measured, s = _measure(Machine(on_off_trace(seed)), plan)
    assert s.difference == Difference.FASTER
    assert s.estimate == pytest.approx(1.6, rel=0.01) and s.low <= 1.6 * 1.002 and s.high >= 1.6 / 1.002
    assert s.left_out < s.rounds / 4  # at most the rounds that straddled a switch of the load
    assert {r.a_first for r in measured.rounds} == {True, False}  # the order alternates


def test_a_load_that_hits_one_side_only_withholds_the_verdict():
    machine = Machine(lambda now, side: 1.0 if side == "b" else 0.0)
    _, s = _measure(machine, Plan(budget=5.0, precision=0.05, min_rounds=8, block=0.1))
    assert (s.difference, s.why) == (Difference.INCONCLUSIVE, Why.UNEQUAL_LOAD)
    assert s.estimate == pytest.approx(24 / 20)  # 24 steps against 15 x 1.3: shown, never decided on


def test_a_quiet_machine_stops_once_the_interval_is_narrow_enough():
    plan = Plan(budget=20.0, precision=0.05, min_rounds=8, block=0.1)
    measured, s = _measure(Machine(lambda now, side: 0.0), plan)
    assert s.rounds == plan.min_rounds and s.ratio.half_width == pytest.approx(0.0, abs=1e-12)
    assert s.estimate == pytest.approx(1.6)
    assert measured.rounds[0].a.calls == 4 and measured.rounds[0].b.calls == 7  # blocks of about 0.1 s
    assert measured.seconds < 2.0


def test_rounds_go_on_for_the_plans_span_though_the_interval_is_narrow_enough():
    # a disk whose state lasts seconds: rounds that stop on precision read one state
    plan = Plan(budget=20.0, precision=0.05, min_rounds=8, block=0.1, span=3.0)
    measured, s = _measure(Machine(lambda now, side: 0.0), plan)
    assert measured.seconds >= 3.0 and s.rounds > plan.min_rounds and s.rounds % 2 == 0
    assert measured.seconds < 3.5  # and no longer than the span once the interval is narrow
    short = Plan(budget=2.0, precision=0.05, min_rounds=8, block=0.1, span=3.0)
    assert _measure(Machine(lambda now, side: 0.0), short)[0].seconds < 2.5  # the budget still bounds it


def _straying(seed: int, sd: float):
    # an idle machine, and sides whose calls take `work` seconds times a lognormal stray of `sd`
    machine = Machine(lambda now, side: 0.0)
    draws = iter(np.exp(np.random.default_rng(seed).normal(0, sd, 100_000)))

    def side(work: float) -> Side:
        def run():
            machine.now += work * next(draws)
            return "x"
        return Side(run)

    return machine, side


def test_rounds_go_on_while_the_interval_holds_1_and_a_difference_beyond_the_precision():
    # a 3% speedup whose calls stray 12%: with these draws the first eight rounds give an
    # interval within +-5% of its estimate that holds both 1 and 1.05, where rounds used to stop;
    # they go on until it decides (here within +-5% of 1: no significant difference)
    machine, side = _straying(17, 0.12)
    plan = Plan(budget=60.0, precision=0.05, min_rounds=8, block=0.1)
    measured = alternate(side(0.0206), side(0.02), plan, clock=machine.clock, load=machine.probe)
    first = paired(measured.rounds[:8], plan.precision, plan.min_rounds)
    assert first.ratio.half_width <= plan.precision and first.why is Why.UNDECIDED
    s = paired(measured.rounds, plan.precision, plan.min_rounds)
    assert len(measured.rounds) > 8 and (s.difference, s.why) == (Difference.NONE, Why.INTERVAL)
    assert 1 / 1.05 <= s.low <= s.high <= 1.05


def test_rounds_go_on_while_the_interval_holds_1_and_a_difference_beyond_the_bound_of_no_difference():
    # a 1% speedup whose calls stray 8%, under a plan that counts no difference only within 2%:
    # after ten rounds the interval lies within the precision but holds 1 and a 2% difference,
    # where a plan without the bound stops on "no significant difference"; these go on until the
    # interval decides within the bound
    machine, side = _straying(4, 0.08)
    plan = Plan(budget=60.0, precision=0.05, min_rounds=8, block=0.1, no_difference=0.02)
    measured = alternate(side(0.0202), side(0.02), plan, clock=machine.clock, load=machine.probe)
    unbounded = Plan(budget=60.0, precision=0.05, min_rounds=8, block=0.1)
    assert unbounded.judged(measured.rounds[:10]).difference is Difference.NONE
    assert plan.judged(measured.rounds[:10]).why is Why.NOT_NEGLIGIBLE
    s = plan.judged(measured.rounds)
    assert len(measured.rounds) > 10 and (s.difference, s.why) == (Difference.NONE, Why.INTERVAL)
    assert 1 / 1.02 <= s.low <= s.high <= 1.02


def test_a_noisy_machine_spends_its_budget_and_says_so():
    rng = np.random.default_rng(0)
    noise = {}

    def load(now, side):  # a different load in every 50 ms slot, independent of the side
        slot = int(now / 0.05)
        return noise.setdefault(slot, float(rng.uniform(0, 3)))

    plan = Plan(budget=3.0, precision=0.005, min_rounds=8, block=0.1)
    measured, s = _measure(Machine(load, slowdown=1.5), plan)
    assert 3.0 <= measured.seconds < 3.0 + 0.5  # the round under way finishes
    assert s.difference == Difference.INCONCLUSIVE and s.why in (Why.TOO_NOISY, Why.UNEQUAL_LOAD)


def test_the_answers_of_timed_calls_are_kept_from_the_warm_up_the_first_and_the_last_round():
    machine = Machine(lambda now, side: 0.0)
    measured, _ = _measure(machine, Plan(budget=20.0, precision=0.05, min_rounds=8, block=0.1))
    last = len(measured.rounds) - 1
    assert [i for i, _ in measured.a.outputs] == [-1, 0, last]
    assert [out for _, out in measured.b.outputs] == ["b", "b", "b"]


def test_a_declared_reset_runs_before_every_call_outside_the_timed_region():
    machine = Machine(lambda now, side: 0.0)
    cache: list[int] = []
    resets = []

    def reset():
        resets.append(machine.now)
        cache.clear()
        machine.now += 0.05  # a slow reset: it must not count

    def cached():
        cache.append(1)
        return machine.call("b", 0.015)()

    b = Side(cached, before=reset, probe=lambda: len(cache))
    measured = alternate(Side(machine.call("a", 0.024)), b, Plan(budget=5.0, precision=0.05, min_rounds=8, block=0.1),
                         clock=machine.clock, load=machine.probe)
    calls = 1 + sum(r.b.calls for r in measured.rounds)
    assert len(resets) == calls
    assert all(r.b.per_call == pytest.approx(0.015, abs=STEP) for r in measured.rounds)
    assert {reading for _, reading in measured.b.states} == {0}  # every sampled block started empty


def test_blocks_are_sized_again_after_a_slow_first_call():
    machine = Machine(lambda now, side: 0.0)
    first = [True]

    def lazy():  # the first call builds something: 50 ms; then 5 ms a call
        work = 0.05 if first[0] else 0.005
        first[0] = False
        return machine.call("b", work)()

    measured = alternate(Side(machine.call("a", 0.024)), Side(lazy), Plan(budget=5.0, precision=0.05, min_rounds=4,
                                                                            block=0.1),
                         clock=machine.clock, load=machine.probe)
    assert measured.rounds[0].b.calls == 2 and measured.rounds[1].b.calls == 20  # 0.1 s of steady 5 ms calls


def test_warm_up_rounds_are_not_counted_and_come_out_of_the_budget():
    # the variant's first 12 calls run 30% slow (caches and pools filling): 0.3 s of uncounted
    # rounds take them, and the counted rounds read the steady ratio exactly
    machine = Machine(lambda now, side: 0.0)
    calls = [0]

    def settling():
        calls[0] += 1
        return machine.call("b", 0.013 if calls[0] <= 12 else 0.01)()

    plan = Plan(budget=2.0, precision=0.05, min_rounds=4, block=0.05, warmup=0.3)
    measured = alternate(Side(machine.call("a", 0.02)), Side(settling), plan, clock=machine.clock, load=machine.probe)
    s = paired(measured.rounds, plan.precision, plan.min_rounds)
    assert all(r.b.per_call == pytest.approx(0.01, abs=STEP) for r in measured.rounds)
    assert s.estimate == pytest.approx(2.0, rel=1e-3) and s.rounds == 4
    assert measured.seconds >= plan.warmup  # the warm-up is part of the pair's time
    assert measured.rounds[0].b.calls == 5  # blocks sized on the last uncounted round's steady calls


def test_rounds_stop_at_an_even_count_so_each_order_runs_as_often():
    plan = Plan(budget=20.0, precision=0.05, min_rounds=5, block=0.1)
    measured, s = _measure(Machine(lambda now, side: 0.0), plan)
    assert len(measured.rounds) == 6
    assert sum(r.a_first for r in measured.rounds) == 3


def test_the_garbage_collector_is_paused_inside_every_timed_block_and_runs_between_them():
    # asv samples with the collector off; so do the rounds, or a full collection (70-480 ms in a
    # process holding a tokenizer and a model here) lands in whichever side's block set it off
    machine = Machine(lambda now, side: 0.0)
    seen = []

    def garbage_maker(side):
        work = machine.call(side, 0.01)

        def run():
            seen.append(gc.isenabled())
            for _ in range(2000):  # cyclic garbage: enough to set off collections
                node = []
                node.append(node)
            return work()
        return run

    collections = []
    gc.callbacks.append(lambda phase, info: collections.append(phase) if phase == "start" else None)
    try:
        assert gc.isenabled()
        measured = alternate(Side(garbage_maker("a")), Side(garbage_maker("b")),
                             Plan(budget=1.0, precision=0.05, min_rounds=6, block=0.05),
                             clock=machine.clock, load=machine.probe)
    finally:
        gc.callbacks.pop()
    counted = sum(r.a.calls + r.b.calls for r in measured.rounds)
    assert counted >= 12 and seen.count(False) >= counted  # every call of every counted block
    assert collections and gc.isenabled()  # the collector ran, between blocks, and is on again


def test_a_collector_already_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
