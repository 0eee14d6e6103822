"""The nightly check simulated: a history grows one commit a night, suspects are re-measured.

Run: `.venv/bin/python -m tools.nightly_simulation [--quick] [--rounds 8] [--json PATH]`. A
benchmark, not a test: it prints tables (and writes JSON), it asserts nothing.

Each night the new commit's value arrives and `proofbench.analysis.tracker.Tracker` runs
(its defaults: horizon 120, min_step 3%, alpha 0.001). Steps are measured again as
`proofbench check` does: `--rounds` (6) paired rounds of two commits, each round one fresh run
of each from the history's own noise model (`history_synth.run`: run-level noise, outliers,
slow mode, drift, all drawn afresh) summarised by its median, decided by
`proofbench.analysis.confirm.looks` (more batches of rounds while they are too wide to decide,
up to `confirm.LOOKS`; each look at `--alpha` / LOOKS). A suspected step: the commit before it
and the newest (`confirm.commits`); confirmed raises the alert, dropped keeps it from being
suspected again, inconclusive leaves it suspected (measured again the next night it still
is). A step the history decides tonight: its neighbours (`confirm.neighbours`); dropped, it is
withdrawn, else raised. With `--bisect` (as `check --bisect`), a confirmed step is then placed
by `proofbench.analysis.bisect.bisect` among the commits between the two compared, fresh runs
of each commit read beside a fresh run of the newer one as `bisect.locate` takes them (the
noise models have no drift between runs for that pairing to cancel, only the reference's own
noise to add), the levels the medians of the confirmation's rounds and the spread of their
ratios that of one value (`bisect.rounds_spread`), and what it ends with checked as `locate`
checks it (the parent read beside the culprit, fresh runs of both); where it cannot tell, the
alert goes to the range's last commit, as `bisect.settle` places it; the table shows both.
Without it, a confirmed step stands at the newer commit compared, as the check puts it.

Suites per noise model (seed SEED, apart from the detector's tuning seeds): histories that
end 10 commits after one 10% regression (after 20-80 commits), the same with 5%, and
change-free histories of 150 commits. Night 1 is the night the first commit at the new level
arrives. Reported: the share of 10% regressions flagged on night 1 or 2, of 5% regressions
within 3 nights, false alerts per 100 nightly runs (an alert that matches no true step within
2 commits, or matches one already flagged; every night of every history counts as a run),
re-measurements per 100 nights and their paired rounds on average (their cost); beside, the same
tracker without re-measurement (history alone); and how the bisections over a true step went
(named its commit, named a wrong one, could not tell).

With `--anchors`, the anchors of the detector's evaluation that come nearest its F1 (asv's step
detection, Otava, e-divisive; `tools.anchors`, at their defaults) run as the nightly check too:
the same tracker (window, alerted once, same-step rule, age limit) with the anchor finding the
steps in each night's window from ANCHOR_FIRST values on, by the history alone (an anchor
cannot say which of its steps are undecided, so nothing is re-measured). A detector's F1 over
a whole history counts each false step once; a nightly check that runs it every night over the
same commits gets a false step each night it shows. (Ruptures and the Mann-Whitney window are
behind the detector's F1 on every noise model, and 5-30 times slower a window: left out.)
"""
from __future__ import annotations

import argparse
import json
import math
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import Callable

import numpy as np

from proofbench.analysis import bisect as bisection
from proofbench.analysis.confirm import ALPHA, LOOKS, Outcome, Rounds, commits, looks, neighbours
from proofbench.analysis.detect import ChangePoint
from proofbench.analysis.tracker import Tracker
from tools import anchors
from tools import history_synth as synth

SEED = 20251102
TOLERANCE = 2
CHANGE_FREE_LENGTH = 150
ROUNDS = 6  # as `proofbench check --confirm-rounds`
MODES = (("re-measured", True, False), ("--bisect", True, True), ("history alone", False, False))
ANCHORS = ("asv", "otava", "e-divisive")
ANCHOR_FIRST = 10  # values in the window before an anchor runs


@dataclass(frozen=True)
class Night:
    """How one history went: alerts (night, index, direction, confirmed by re-measurement), the
    re-measurements made and their paired rounds in all."""

    history: synth.History
    alerts: tuple[tuple[int, int, int, bool], ...]
    remeasured: int
    rounds: int = 0
    bisected: tuple[str, ...] = ()  # each bisection over a true step: "named", "wrong" or "cannot tell"


def simulate(history: synth.History, rounds: int, alpha: float, confirm: bool = True,
             bisect: bool = False) -> Night:
    """The nightly tracker over one history, measuring steps again when `confirm` (and placing
    confirmed ones by bisection when `bisect`)."""
    rng = np.random.default_rng([SEED, zlib.crc32(history.name.encode())])
    tracker = Tracker()
    alerts, used, bisected = [], [], []  # used: the paired rounds of each re-measurement

    def remeasure(cp, first: int, last: int):
        got, decision = looks(partial(_batch, history, first, last, rounds, rng), cp, min_step=tracker.min_step,
                              alpha=alpha)
        used.append(len(got.before))
        return got, decision

    for night, value in enumerate(history.values):
        for cp in tracker.add(value):
            if confirm:
                first, last = neighbours(cp.index, night)
                if remeasure(cp, first, last)[1].outcome is Outcome.DROPPED:
                    tracker.reject(cp, first, last)
                    continue
            alerts.append((night, cp.index, cp.direction, False))
        for cp in tracker.suspected if confirm else ():
            first, last = commits(cp.index, night)
            got, decision = remeasure(cp, first, last)
            if decision.outcome is Outcome.CONFIRMED:
                index = _culprit(history, first, last, got, rng, bisected) if bisect else last
                tracker.accept(replace(cp, index=index))
                alerts.append((night, index, cp.direction, True))
            elif decision.outcome is Outcome.DROPPED:
                tracker.reject(cp, first, last)
    return Night(history, tuple(alerts), len(used), sum(used), tuple(bisected))


def _culprit(history: synth.History, first: int, last: int, got: Rounds, rng: np.random.Generator,
             bisected: list[str]) -> int:
    # the first commit at the new level among first+1..last, bisected on fresh runs, each read as
    # its ratio to a fresh run of `last` times the new level, as `bisect.beside` reads commits
    # (where it cannot tell, `bisect.settle` places it, as `bisect.locate` does)
    levels = bisection.rounds_levels(got.before, got.after)

    def measure(c: int, reference: int = last) -> float:
        return float(np.median(synth.run(history, int(c), rng)) / np.median(synth.run(history, int(reference), rng))
                     ) * levels[1]
    commits = list(range(first + 1, last + 1))
    found = bisection.bisect(measure, commits, *levels, runs=bisection.RUNS,
                             spread=bisection.rounds_spread(got.before, got.after), check=measure, older=first)
    truth = [s.index for s in history.steps if first < s.index <= last]
    if truth:  # how it went, where the range holds a true step
        bisected.append("cannot tell" if found.culprit is None else "named" if int(found.culprit) == truth[0]
                        else "wrong")
    return int(bisection.settle(found))


def _batch(history: synth.History, first: int, last: int, rounds: int, rng: np.random.Generator,
           _left: float) -> Rounds:
    # `rounds` fresh runs of the commit before and of the commit after, each summarised by its median
    before = tuple(float(np.median(synth.run(history, first, rng))) for _ in range(rounds))
    after = tuple(float(np.median(synth.run(history, last, rng))) for _ in range(rounds))
    return Rounds(str(first), str(last), before, after, 0.0)


def _track(history: synth.History, find: Callable[[list[float | None]], list[ChangePoint]]
           ) -> tuple[tuple[int, int, int, bool], ...]:
    """The tracker fed `history` a night at a time, `find` finding the steps in each night's
    window once it holds ANCHOR_FIRST values; the alerts, as `Night` holds them."""
    tracker = Tracker(detector=lambda values: find(values) if len(values) >= ANCHOR_FIRST else [])
    return tuple((night, cp.index, cp.direction, False) for night, value in enumerate(history.values)
                 for cp in tracker.add(value))


def anchor_windows(history: synth.History) -> list[list[float | None]]:
    """The windows the tracker hands its detector on the nights an anchor runs, in order."""
    seen: list[list[float | None]] = []
    _track(history, lambda values: seen.append(list(values)) or [])
    return seen


def anchor_points(values: list[float], found: anchors.Found) -> list[ChangePoint]:
    """An anchor's (index, direction) pairs in a window as change points, their levels the
    medians of the window's segments between the anchor's boundaries (which the tracker's
    same-step rule reads); an increase is a regression, as for a time."""
    direction = dict(found)
    return [ChangePoint(k, direction[k], before, after, math.nan, math.nan, direction[k] == 1)
            for k, before, after in anchors.levels(values, list(direction))]


def anchor_night(history: synth.History, found: list[anchors.Found]) -> Night:
    """The nightly tracker over one history, by the history alone, with an anchor's change
    points in each night's window (`found`: one list per window of `anchor_windows`)."""
    nightly = iter(found)
    return Night(history, _track(history, lambda values: anchor_points(values, next(nightly))), 0)


def _in_process_anchor(history: synth.History, name: str) -> Night:
    find = anchors.IN_PROCESS[name]
    return Night(history, _track(history, lambda values: anchor_points(values, find(values))), 0)


def anchor_nights(name: str, histories: list[synth.History], pool: ProcessPoolExecutor, workers: int) -> list[Night]:
    """Every history's nights with the anchor `name` as the nightly check."""
    if name != "e-divisive":
        return list(pool.map(partial(_in_process_anchor, name=name), histories, chunksize=2))
    windows = [anchor_windows(h) for h in histories]
    found = anchors.EDivisiveRun([w for ws in windows for w in ws], workers).result()
    nights, at = [], 0
    for h, ws in zip(histories, windows):
        nights.append(anchor_night(h, found[at:at + len(ws)]))
        at += len(ws)
    return nights


def flagged(night: Night) -> tuple[dict[int, int], int]:
    """{step position: nights to flag (1: the night its first commit arrived)} and false alerts."""
    steps, out, false = night.history.steps, {}, 0
    for when, index, direction, _ in night.alerts:
        hits = [j for j, s in enumerate(steps) if j not in out and s.direction == direction
                and abs(index - s.index) <= TOLERANCE and s.index <= when]
        if hits:
            j = min(hits, key=lambda j: abs(index - steps[j].index))
            out[j] = when - steps[j].index + 1
        else:
            false += 1
    return out, false


def suites(per_model: int, models: tuple[str, ...]) -> list[synth.History]:
    """10% and 5% regression histories and change-free ones, per noise model."""
    out = []
    for size in (0.10, 0.05):
        out += synth.generate_regressions(per_model, size=size, seed=SEED + int(100 * size), models=models)
    out += synth.generate(per_model // 2, seed=SEED, models=models, lengths=(CHANGE_FREE_LENGTH, CHANGE_FREE_LENGTH))
    return [h for h in out if "regression" in h.name or not h.steps]


def summarise(nights: list[Night]) -> dict:
    """The figures of one noise model."""
    ten, five, false, runs, remeasured, used = [], [], 0, 0, 0, 0
    for n in nights:
        hit, f = flagged(n)
        false, runs, remeasured = false + f, runs + len(n.history), remeasured + n.remeasured
        used += n.rounds
        for j, step in enumerate(n.history.steps):
            (ten if step.size == 0.10 else five).append(hit.get(j, math.inf))
    share = lambda xs, k: sum(x <= k for x in xs) / len(xs) if xs else math.nan  # noqa: E731
    return {"flagged_10pct_by_night_2": share(ten, 2), "flagged_5pct_by_night_3": share(five, 3),
            "flagged_10pct_by_night_5": share(ten, 5),
            "median_nights_10pct": float(np.median(ten)) if ten else math.nan,
            "false_alerts_per_100_nights": 100 * false / runs, "remeasured_per_100_nights": 100 * remeasured / runs,
            "rounds_per_remeasurement": used / remeasured if remeasured else math.nan,
            "regressions_10pct": len(ten), "regressions_5pct": len(five), "nights": runs,
            "bisections": {k: sum(b == k for n in nights for b in n.bisected)
                           for k in ("named", "wrong", "cannot tell")}}


def _fmt(x: float, scale: float = 100.0, digits: int = 1) -> str:
    return "-" if math.isnan(x) else "never" if math.isinf(x) else f"{scale * x:.{digits}f}"


def main(argv: list[str] | None = None) -> None:
    """Simulate every suite with and without re-measurement; print (and write) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smaller suite")
    parser.add_argument("--per-model", type=int, default=None, help="regression histories per size and model")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="paired rounds of a re-measurement")
    parser.add_argument("--alpha", type=float, default=ALPHA, help="1 - confidence of the re-measured interval")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--anchors", action="store_true", help="also the anchors as nightly checks (minutes more)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    per_model = args.per_model or (12 if args.quick else 50)
    histories = sorted(suites(per_model, synth.NOISE_MODELS), key=len, reverse=True)
    t0 = time.perf_counter()
    out: dict = {"meta": {"seed": SEED, "per_model": per_model, "rounds": args.rounds, "alpha": args.alpha}}
    labels = [label for label, _, _ in MODES]
    not_run = _anchors_not_run() if args.anchors else {}
    with ProcessPoolExecutor(args.workers) as pool:
        for label, confirm, bisect in MODES:
            run = partial(simulate, rounds=args.rounds, alpha=args.alpha, confirm=confirm, bisect=bisect)
            out[label] = _by_model(list(pool.map(run, histories, chunksize=2)))
        for name in ANCHORS if args.anchors else ():
            if name not in not_run:
                labels.append(name)
                out[name] = _by_model(anchor_nights(name, histories, pool, args.workers))
    out["meta"]["wall_s"] = round(time.perf_counter() - t0, 1)
    out["meta"]["anchors_not_run"] = not_run
    print(f"nightly simulation: {len(histories)} histories ({per_model} per regression size and noise model, "
          f"{per_model // 2} change-free of {CHANGE_FREE_LENGTH}), {args.rounds} rounds a re-measurement "
          f"(up to {LOOKS} batches while too wide to decide), each look at {1 - args.alpha / LOOKS:.2%}; "
          f"{out['meta']['wall_s']:.0f} s wall\n")
    head = (f"{'mode':<15}{'noise':<10}{'10%<=2n%':>9}{'5%<=3n%':>9}{'10%<=5n%':>9}{'med.n':>6}{'FA/100n':>8}"
            f"{'remeas/100n':>12}{'rounds':>7}")
    print(head + "\n" + "-" * len(head))
    for label in labels:
        for m in (*synth.NOISE_MODELS, "all"):
            s = out[label][m]
            print(f"{label:<15}{m:<10}{_fmt(s['flagged_10pct_by_night_2']):>9}{_fmt(s['flagged_5pct_by_night_3']):>9}"
                  f"{_fmt(s['flagged_10pct_by_night_5']):>9}{_fmt(s['median_nights_10pct'], 1, 0):>6}"
                  f"{_fmt(s['false_alerts_per_100_nights'], 1, 2):>8}{_fmt(s['remeasured_per_100_nights'], 1, 1):>12}"
                  f"{_fmt(s['rounds_per_remeasurement'], 1, 1):>7}")
        print()
    if args.anchors:
        print(f"anchors ({', '.join(labels[len(MODES):])}): the same tracker by the history alone, the anchor finding "
              f"the steps in each night's window" + "".join(f"; {k} not run: {v}" for k, v in not_run.items()))
    b = out["--bisect"]["all"]["bisections"]
    print(f"bisections over a true step: {sum(b.values())}; named its commit {b['named']}, a wrong commit "
          f"{b['wrong']}, could not tell {b['cannot tell']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(_finite(out), f, indent=1)


def _by_model(nights: list[Night]) -> dict:
    out = {m: summarise([n for n in nights if n.history.noise == m]) for m in synth.NOISE_MODELS}
    out["all"] = summarise(nights)
    return out


def _anchors_not_run() -> dict[str, str]:
    # the anchors that cannot run here, and why
    reasons = {**anchors.in_process_available(), "e-divisive": anchors.edivisive_available()}
    return {name: reasons[name] for name in ANCHORS if reasons[name]}


def _finite(x):
    # JSON has no NaN or infinity: nothing counted, or never flagged, is null.
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    return x if not isinstance(x, float) or math.isfinite(x) else None


if __name__ == "__main__":
    main()
