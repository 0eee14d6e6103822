"""How well change-point detectors find steps in synthetic histories: one scorer for all.

Run: `.venv/bin/python -m tools.detect_evaluation [--quick] [--json PATH]`. A benchmark
of the detectors, not a test: it prints tables (and writes JSON), it asserts nothing.

Detectors: asv's step detection (`asv.step_detect.detect_steps`: every boundary between two
of its segments is a change point), on values and with asv's own sample weights (2 / width
of each commit's 99% CI, as `asv publish` weights them); and `proofbench.analysis.detect` on values
alone and with each commit's samples.

Suites (`tools.history_synth`): the main suite (histories of 30-200 commits, 0-3 steps of
2-50%, six noise models) and a regression suite (per noise model, histories ending 10
commits after one 10% rise), which gives the nights-to-flag figure enough cases.

Offline, a detector sees whole histories. A detection matches a true step when it has the
same direction and its index is within TOLERANCE = 2 commits of the step's first commit;
each step and each detection match at most once (closest first), so a second report of one
step, or a report 3+ commits off, is a false positive. Reported: precision; recall per
(step size, noise model) cell, over all steps, and over *detectable* steps (size >= 3x the
history's noise CV, `history_synth.detectable`; e.g. 2% steps under 8% noise are not);
false positives per 100 commits of the change-free histories.

Nightly, a detector is fed one commit a night. An alert raised on night t (once commit t
arrived) is true when it matches, within the same tolerance, a step at or before t that no
earlier alert matched; otherwise it is a false alert. asv has no memory between nights, so
its nightly job reruns it on the history so far and alerts on boundaries it has not alerted
before (same direction within 4 commits: the rule `proofbench.analysis.detect.Tracker` uses); "asv
confirm-2" alerts only boundaries reported two nights in a row. Reported: false alerts per
100 nightly runs (every night of every main-suite history counts as a run) and, on the
regression suite, the share of 10% regressions flagged within 5 nights and the median
nights to flag; night 1 is the night the first commit at the new level arrives.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from asv.step_detect import detect_steps
from asv_runner.statistics import compute_stats

from proofbench.analysis.detect import Tracker, detect
from tools import history_synth as synth

TOLERANCE = 2
RADIUS = 4  # nightly: a boundary within this many commits of an alert is that alert again
DETECTORS = ("asv", "asv+weights", "asv confirm-2", "proofbench", "proofbench+samples")
FLAG_NIGHTS = 5


@dataclass(frozen=True)
class Outcome:
    """What the detectors reported on one history: offline (index, direction) pairs and
    nightly (night, index, direction) alerts, by detector name."""

    history: synth.History
    offline: dict[str, list[tuple[int, int]]]
    nightly: dict[str, list[tuple[int, int, int]]]


def _asv_changes(values: tuple[float, ...], weights: list[float | None] | None = None
                 ) -> list[tuple[int, int]]:
    # detect_steps gives (left, right, level, min, error) segments; each new one is a change.
    steps = detect_steps(list(values), weights)
    return [(new[0], 1 if new[2] > old[2] else -1)
            for old, new in zip(steps, steps[1:]) if new[2] != old[2]]


def _asv_weights(history: synth.History) -> list[float | None]:
    # asv publish weights a commit by 2 / width of its 99% CI (asv._stats.get_weight).
    weights = []
    for s in history.samples:
        stats = compute_stats(list(s), 1)[1]
        a, b = stats["ci_99_a"], stats["ci_99_b"]
        weights.append(None if not math.isfinite(a - b) or a == b else 2 / abs(b - a))
    return weights


def _rerun_nightly(history: synth.History, weights: list[float | None] | None = None,
                   confirms: tuple[int, ...] = (1,)) -> dict[int, list[tuple[int, int, int]]]:
    """asv as a nightly job: rerun on the history so far, alert on new boundaries; one
    alert list per confirmation rule (boundary reported on that many nights in a row)."""
    alerts: dict[int, list[tuple[int, int, int]]] = {c: [] for c in confirms}
    streaks: list[tuple[int, int, int]] = []  # (index, direction, nights in a row)
    for night in range(len(history)):
        w = None if weights is None else weights[:night + 1]
        now = []
        for index, direction in _asv_changes(history.values[:night + 1], w):
            streak = 1 + max((n for i, d, n in streaks
                              if d == direction and abs(i - index) <= RADIUS), default=0)
            now.append((index, direction, streak))
            for confirm, raised in alerts.items():
                known = any(d == direction and abs(i - index) <= RADIUS for _, i, d in raised)
                if streak >= confirm and not known:
                    raised.append((night, index, direction))
        streaks = now
    return alerts


def _tracker_nightly(history: synth.History, with_samples: bool) -> list[tuple[int, int, int]]:
    tracker = Tracker()
    alerts = []
    for night, value in enumerate(history.values):
        for cp in tracker.add(value, history.samples[night] if with_samples else None):
            alerts.append((night, cp.index, cp.direction))
    return alerts


def run_history(history: synth.History) -> Outcome:
    """Every detector on one history of the main suite, offline and nightly."""
    offline = {
        "asv": _asv_changes(history.values),
        "asv+weights": _asv_changes(history.values, _asv_weights(history)),
        "proofbench": [(c.index, c.direction) for c in detect(history.values)],
        "proofbench+samples": [(c.index, c.direction)
                               for c in detect(history.values, samples=history.samples)],
    }
    offline["asv confirm-2"] = offline["asv"]
    return Outcome(history, offline, run_nightly(history).nightly)


def run_nightly(history: synth.History) -> Outcome:
    """Every detector on one history as a nightly job (the regression suite's view)."""
    plain = _rerun_nightly(history, confirms=(1, 2))
    nightly = {
        "asv": plain[1],
        "asv confirm-2": plain[2],
        "asv+weights": _rerun_nightly(history, _asv_weights(history))[1],
        "proofbench": _tracker_nightly(history, False),
        "proofbench+samples": _tracker_nightly(history, True),
    }
    return Outcome(history, {}, nightly)


def match(found: list[tuple[int, int]], steps: tuple[synth.Step, ...]
          ) -> tuple[dict[int, int], int]:
    """Closest-first matching within TOLERANCE: {step position: detection position} and
    the number of detections left unmatched (false positives)."""
    pairs = sorted((abs(f[0] - s.index), i, j) for i, f in enumerate(found)
                   for j, s in enumerate(steps)
                   if f[1] == s.direction and abs(f[0] - s.index) <= TOLERANCE)
    used_f, matched = set(), {}
    for _, i, j in pairs:
        if i not in used_f and j not in matched:
            used_f.add(i)
            matched[j] = i
    return matched, len(found) - len(used_f)


def match_nightly(alerts: list[tuple[int, int, int]], steps: tuple[synth.Step, ...]
                  ) -> tuple[dict[int, int], int]:
    """Alerts in the order raised: {step position: night flagged} and false alerts."""
    flagged: dict[int, int] = {}
    false = 0
    for night, index, direction in alerts:
        hits = [j for j, s in enumerate(steps) if j not in flagged and s.direction == direction
                and abs(index - s.index) <= TOLERANCE and s.index <= night]
        if hits:
            flagged[min(hits, key=lambda j: abs(index - steps[j].index))] = night
        else:
            false += 1
    return flagged, false


class Tally:
    """Counts for one detector over a group of histories."""

    def __init__(self) -> None:
        self.tp = self.fp = self.free_fp = self.free_commits = 0
        self.steps = self.found = self.detectable = self.detectable_found = 0
        self.cells: dict[tuple[float, str], list[int]] = {}
        self.nights = self.false_alerts = 0
        self.regression_nights: dict[float, list[float]] = {}  # inf: never flagged

    def add_offline(self, h: synth.History, found: list[tuple[int, int]]) -> None:
        """Score one history's offline detections."""
        matched, fp = match(found, h.steps)
        self.tp, self.fp = self.tp + len(matched), self.fp + fp
        if not h.steps:
            self.free_fp, self.free_commits = self.free_fp + fp, self.free_commits + len(h)
        for j, step in enumerate(h.steps):
            hit = int(j in matched)
            self.steps, self.found = self.steps + 1, self.found + hit
            if synth.detectable(step, h):
                self.detectable += 1
                self.detectable_found += hit
            cell = self.cells.setdefault((step.size, h.noise), [0, 0])
            cell[0], cell[1] = cell[0] + hit, cell[1] + 1

    def add_nightly(self, h: synth.History, alerts: list[tuple[int, int, int]]) -> None:
        """Score one history's nightly alerts."""
        flagged, false = match_nightly(alerts, h.steps)
        self.nights, self.false_alerts = self.nights + len(h), self.false_alerts + false
        for j, step in enumerate(h.steps):
            if step.direction > 0:
                nights = flagged[j] - step.index + 1 if j in flagged else math.inf
                self.regression_nights.setdefault(step.size, []).append(nights)

    def summary(self) -> dict[str, float]:
        """The headline figures of this tally (NaN where nothing was counted)."""
        ratio = lambda a, b: a / b if b else math.nan  # noqa: E731
        ten = self.regression_nights.get(0.10, [])
        return {
            "precision": ratio(self.tp, self.tp + self.fp),
            "recall": ratio(self.found, self.steps),
            "recall_detectable": ratio(self.detectable_found, self.detectable),
            "fp_per_100_commits": 100 * ratio(self.free_fp, self.free_commits),
            "false_alerts_per_100_nights": 100 * ratio(self.false_alerts, self.nights),
            "flagged_10pct_within_5": ratio(sum(n <= FLAG_NIGHTS for n in ten), len(ten)),
            "median_nights_10pct": float(np.median(ten)) if ten else math.nan,
            "regressions_10pct": len(ten),
            "steps": self.steps,
        }


def evaluate(histories: list[synth.History], regressions: list[synth.History],
             workers: int) -> tuple[list[Outcome], list[Outcome]]:
    """Every detector on the main suite (offline and nightly) and on the regression suite
    (nightly), in `workers` processes."""
    # Longest first, so the pool does not end waiting on one long history.
    main = sorted(histories, key=len, reverse=True)
    late = sorted(regressions, key=len, reverse=True)
    if workers <= 1:
        return [run_history(h) for h in main], [run_nightly(h) for h in late]
    with ProcessPoolExecutor(workers) as pool:
        return (list(pool.map(run_history, main, chunksize=2)),
                list(pool.map(run_nightly, late, chunksize=4)))


def tally(main: list[Outcome], late: list[Outcome]) -> dict[str, dict[str, dict[str, Tally]]]:
    """Tallies by detector, then suite ("main", "regressions"), then noise model or "all"."""
    out: dict[str, dict[str, dict[str, Tally]]] = {}
    for name in DETECTORS:
        suites = out.setdefault(name, {"main": {}, "regressions": {}})
        for o in main:
            for key in (o.history.noise, "all"):
                t = suites["main"].setdefault(key, Tally())
                t.add_offline(o.history, o.offline[name])
                t.add_nightly(o.history, o.nightly[name])
        for o in late:
            for key in (o.history.noise, "all"):
                suites["regressions"].setdefault(key, Tally()).add_nightly(o.history, o.nightly[name])
    return out


def _fmt(x: float, scale: float = 100.0, digits: int = 1) -> str:
    if math.isnan(x):
        return "-"
    return "never" if math.isinf(x) else f"{scale * x:.{digits}f}"


def print_tables(tallies: dict[str, dict[str, dict[str, Tally]]]) -> None:
    """The summary per detector and noise model, then recall per (size, noise) cell."""
    head = (f"{'detector':<20}{'noise':<10}{'prec%':>7}{'recall%':>8}{'rec.det%':>9}"
            f"{'FP/100c':>8}{'FA/100n':>8}{'10%<=5n%':>9}{'med.n':>6}")
    print(head)
    print("-" * len(head))
    for name, suites in tallies.items():
        for key in (*synth.NOISE_MODELS, "all"):
            s, r = suites["main"][key].summary(), suites["regressions"][key].summary()
            print(f"{name:<20}{key:<10}{_fmt(s['precision']):>7}{_fmt(s['recall']):>8}"
                  f"{_fmt(s['recall_detectable']):>9}{_fmt(s['fp_per_100_commits'], 1, 2):>8}"
                  f"{_fmt(s['false_alerts_per_100_nights'], 1, 2):>8}"
                  f"{_fmt(r['flagged_10pct_within_5']):>9}{_fmt(r['median_nights_10pct'], 1, 0):>6}")
        print()
    for name, suites in tallies.items():
        cells = suites["main"]["all"].cells
        print(f"recall % (steps) by step size and noise model: {name}")
        print(f"{'size':<6}" + "".join(f"{m:>11}" for m in synth.NOISE_MODELS))
        for size in synth.STEP_SIZES:
            row = [f"{100 * h / t:3.0f} ({t:3d})" if t else "-"
                   for h, t in (cells.get((size, m), (0, 0)) for m in synth.NOISE_MODELS)]
            print(f"{size:<6.0%}" + "".join(f"{r:>11}" for r in row))
        print()


def to_json(tallies: dict[str, dict[str, dict[str, Tally]]], meta: dict) -> dict:
    """The same figures as the tables, plus nights to flag by regression size."""
    out: dict = {"meta": meta, "detectors": {}}
    for name, suites in tallies.items():
        every = suites["main"]["all"]
        out["detectors"][name] = {
            suite: {key: _finite(t.summary()) for key, t in groups.items()}
            for suite, groups in suites.items()}
        out["detectors"][name]["recall_cells"] = {
            f"{size:g}/{m}": v for (size, m), v in every.cells.items()}
        out["detectors"][name]["regression_nights"] = {
            f"{size:g}": [n if math.isfinite(n) else None for n in ns]
            for size, ns in every.regression_nights.items()}
    return out


def _finite(summary: dict[str, float]) -> dict[str, float | None]:
    # JSON has no NaN or infinity: nothing counted, or never flagged, is null.
    return {k: v if not isinstance(v, float) or math.isfinite(v) else None
            for k, v in summary.items()}


def main(argv: list[str] | None = None) -> None:
    """Generate the suites, score every detector, print the tables (and write JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smaller suite")
    parser.add_argument("--per-model", type=int, default=None, help="histories per noise model")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    per_model = args.per_model or (12 if args.quick else 40)
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    histories = synth.generate(per_model, seed=args.seed)
    regressions = synth.generate_regressions(per_model, seed=args.seed + 1)
    tallies = tally(*evaluate(histories, regressions, args.workers))
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    print(f"main suite: {len(histories)} histories ({per_model} per noise model, seed "
          f"{args.seed}, {sum(map(len, histories))} commits); regression suite: "
          f"{len(regressions)} histories with one 10% regression; {wall:.0f} s wall, "
          f"{cpu:.0f} s CPU\n")
    print_tables(tallies)
    if args.json:
        meta = {"per_model": per_model, "seed": args.seed, "tolerance": TOLERANCE,
                "flag_nights": FLAG_NIGHTS, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}
        with open(args.json, "w") as f:
            json.dump(to_json(tallies, meta), f, indent=1)


def _cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    main()
