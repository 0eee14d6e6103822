"""How well change-point detectors find steps in synthetic histories: one scorer for all.

Run: `.venv/bin/python -m tools.detect_evaluation [--quick] [--tuning | --seed N] [--per-model N]
[--json PATH]`. A
benchmark of the detectors, not a test: it prints tables (and writes JSON), it asserts nothing.

Detectors, all on the same histories: `proofbench.analysis.detect` at its defaults (every step
it reports, decided and weak), its decided steps alone (what the nightly check alerts by the
history alone), with each commit's samples, and with the nightly check's default floor
(`MIN_STEP`, 3%: no 2% step by design; the anchors have no such floor); and the anchors of
`tools.anchors` at their packages' defaults (asv, ruptures, Otava, e-divisive, a Mann-Whitney
window); an anchor that cannot run here is listed with the reason.

Suite (`tools.history_synth`): histories of 30-200 commits, 0-3 steps of 2-50%, six noise
models. Seeds: the evaluation draws its histories from EVALUATION_SEED; the detector's knobs
were tuned on histories from TUNING_SEEDS only (`--tuning` runs on the first of those);
`--seed` draws an evaluation from any other seed.

A detection matches a true step when it has the same direction and its index is within
TOLERANCE = 2 commits of the step's first commit; each step and each detection match at
most once (closest first), so a second report of one step, or a report 3+ commits off, is
a false positive. Reported per noise model: precision, recall (over all steps, and over
*detectable* steps: size >= 3x the history's noise CV), F1 = 2PR / (P + R), and false
positives per 100 commits of the change-free histories; and, per noise model, the detector's F1
less the best anchor's with a 95% interval from a paired bootstrap over histories (both
detectors' counts resampled together): where it holds 0, the suite cannot tell which is
better. Two seeds' suites of 240 histories a model moved an anchor's F1 by up to 4 points
against the detector's, so a difference of that size on one suite decides nothing without
it. Then the detector on real data:
TCPD's F1 and cover, and change points per 100 commits of django's histories
(`tools.real_data`). The nightly view is `tools.nightly_simulation`.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from proofbench.analysis.detect import MIN_STEP, detect
from tools import anchors, real_data
from tools import history_synth as synth

TOLERANCE = 2
BOOTSTRAP = 2000
PER_MODEL = 240  # histories a noise model: at 60, the interval of an F1 difference is about +-5 points
EVALUATION_SEED = 20251101
TUNING_SEEDS = (1234, 20240601, 7, 8)  # 20240601: the seed the detector's first version was tuned on
OURS = ("proofbench", "proofbench decided", "proofbench+samples", "proofbench >= 3%")
DETECTORS = (*OURS, *anchors.IN_PROCESS, "e-divisive")

Found = list[tuple[int, int]]


def run_history(history: synth.History) -> dict[str, Found]:
    """Every in-process detector on one history."""
    found = detect(history.values)
    out = {"proofbench": [(c.index, c.direction) for c in found],
           "proofbench decided": [(c.index, c.direction) for c in found if not c.weak],
           "proofbench+samples": [(c.index, c.direction) for c in detect(history.values, samples=history.samples)],
           "proofbench >= 3%": [(c.index, c.direction) for c in found if c.size >= MIN_STEP]}
    for name, run in anchors.IN_PROCESS.items():
        out[name] = run(history.values)
    return out


def match(found: Found, steps: tuple[synth.Step, ...]) -> tuple[dict[int, int], int]:
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


class Tally:
    """Counts for one detector over a group of histories."""

    def __init__(self) -> None:
        self.tp = self.fp = self.free_fp = self.free_commits = 0
        self.steps = self.found = self.detectable = self.detectable_found = 0
        self.cells: dict[tuple[float, str], list[int]] = {}
        self.counts: list[tuple[int, int, int]] = []  # (matched, false, true steps) per history

    def add(self, h: synth.History, found: Found) -> None:
        """Score one history's detections."""
        matched, fp = match(found, h.steps)
        self.tp, self.fp = self.tp + len(matched), self.fp + fp
        self.counts.append((len(matched), fp, len(h.steps)))
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

    def summary(self) -> dict[str, float]:
        """The headline figures of this tally (NaN where nothing was counted)."""
        ratio = lambda a, b: a / b if b else math.nan  # noqa: E731
        precision, recall = ratio(self.tp, self.tp + self.fp), ratio(self.found, self.steps)
        return {"precision": precision, "recall": recall,
                "f1": float(f1(np.array([self.tp, self.fp, self.steps], dtype=float))),
                "recall_detectable": ratio(self.detectable_found, self.detectable),
                "fp_per_100_commits": 100 * ratio(self.free_fp, self.free_commits),
                "steps": self.steps, "detections": self.tp + self.fp}


def evaluate(histories: list[synth.History], workers: int) -> tuple[dict[str, list[Found]], dict[str, str]]:
    """Every detector on every history (in input order) and the anchors that could not run."""
    missing = {k: v for k, v in anchors.in_process_available().items() if v}
    reason = anchors.edivisive_available()
    if reason:
        missing["e-divisive"] = reason
    edivisive = None if reason else anchors.EDivisiveRun([h.values for h in histories], workers)
    order = sorted(range(len(histories)), key=lambda i: -len(histories[i]))  # longest first
    if workers <= 1:
        results = [run_history(histories[i]) for i in order]
    else:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(run_history, [histories[i] for i in order], chunksize=2))
    found: dict[str, list[Found]] = {name: [[] for _ in histories] for name in DETECTORS}
    for i, result in zip(order, results):
        for name, f in result.items():
            found[name][i] = f
    if edivisive is not None:
        found["e-divisive"] = edivisive.result()
    return found, missing


def tally(histories: list[synth.History], found: dict[str, list[Found]], missing: dict[str, str]
          ) -> dict[str, dict[str, Tally]]:
    """Tallies by detector, then noise model or "all"."""
    out: dict[str, dict[str, Tally]] = {}
    for name in DETECTORS:
        if name in missing:
            continue
        groups = out.setdefault(name, {})
        for h, f in zip(histories, found[name]):
            for key in (h.noise, "all"):
                groups.setdefault(key, Tally()).add(h, f)
    return out


def f1(counts: np.ndarray) -> np.ndarray:
    """F1 = 2PR / (P + R) = 2 TP / (TP + FP + true steps), from counts (matched, false, true
    steps) on the last axis; 0 where nothing matched."""
    return 2 * counts[..., 0] / np.maximum(counts[..., 0] + counts[..., 1] + counts[..., 2], 1)


def f1_difference(ours: Tally, anchor: Tally, resamples: int = BOOTSTRAP, seed: int = 0
                  ) -> tuple[float, float, float]:
    """F1 of `ours` less the anchor's, on the same histories, and its 95% interval: the
    histories resampled with replacement, both detectors' counts together (a paired
    bootstrap; `f1` over the resampled histories)."""
    a, b = np.array(ours.counts, dtype=float), np.array(anchor.counts, dtype=float)
    rows = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))
    diffs = f1(a[rows].sum(axis=1)) - f1(b[rows].sum(axis=1))
    low, high = np.quantile(diffs, [0.025, 0.975])
    return float(f1(a.sum(axis=0)) - f1(b.sum(axis=0))), float(low), float(high)


def print_against_anchors(tallies: dict[str, dict[str, Tally]]) -> dict[str, dict]:
    """Per noise model, the detector's F1 less the best anchor's, with its interval: where
    the interval holds 0, this suite cannot tell which is better."""
    anchors_run = [name for name in tallies if name not in OURS]
    if not anchors_run:
        return {}
    print(f"\nF1 of {OURS[0]} less the best anchor's, paired bootstrap over histories "
          f"({BOOTSTRAP} resamples, 95%)")
    out = {}
    for key in (*synth.NOISE_MODELS, "all"):
        best = max(anchors_run, key=lambda name: tallies[name][key].summary()["f1"])
        d, low, high = f1_difference(tallies[OURS[0]][key], tallies[best][key])
        word = "ahead" if low > 0 else "behind" if high < 0 else "cannot tell"
        out[key] = {"anchor": best, "difference": d, "low": low, "high": high, "word": word}
        print(f"{key:<10}{best:<14}{100 * d:+6.1f} [{100 * low:+5.1f}, {100 * high:+5.1f}]  {word}")
    return out


def _fmt(x: float, scale: float = 100.0, digits: int = 1) -> str:
    return "-" if math.isnan(x) else f"{scale * x:.{digits}f}"


def print_tables(tallies: dict[str, dict[str, Tally]], missing: dict[str, str]) -> None:
    """The summary per noise model and detector, F1 side by side, recall per (size, noise)."""
    head = f"{'noise':<10}{'detector':<20}{'prec%':>7}{'recall%':>8}{'rec.det%':>9}{'F1%':>7}{'FP/100c':>8}"
    print(head + "\n" + "-" * len(head))
    for key in (*synth.NOISE_MODELS, "all"):
        for name, groups in tallies.items():
            s = groups[key].summary()
            print(f"{key:<10}{name:<20}{_fmt(s['precision']):>7}{_fmt(s['recall']):>8}"
                  f"{_fmt(s['recall_detectable']):>9}{_fmt(s['f1']):>7}{_fmt(s['fp_per_100_commits'], 1, 2):>8}")
        print()
    print("F1 % by noise model")
    print(f"{'detector':<20}" + "".join(f"{m:>10}" for m in (*synth.NOISE_MODELS, "all")))
    for name, groups in tallies.items():
        print(f"{name:<20}" + "".join(f"{_fmt(groups[m].summary()['f1']):>10}" for m in (*synth.NOISE_MODELS, "all")))
    for name, why in missing.items():
        print(f"{name:<20}not run: {why}")
    for name in OURS[:1]:
        cells = tallies[name]["all"].cells
        print(f"\nrecall % (steps) by step size and noise model: {name}")
        print(f"{'size':<6}" + "".join(f"{m:>11}" for m in synth.NOISE_MODELS))
        for size in synth.STEP_SIZES:
            row = [f"{100 * h / t:3.0f} ({t:3d})" if t else "-"
                   for h, t in (cells.get((size, m), (0, 0)) for m in synth.NOISE_MODELS)]
            print(f"{size:<6.0%}" + "".join(f"{r:>11}" for r in row))


def real(out: dict) -> None:
    """The detector at its defaults on TCPD and django, into `out` and printed."""
    root = real_data.shared_data()
    if root is None:
        print("\nreal data: ../shared/data not found beside the checkout (or set PROOFBENCH_SHARED_DATA)")
        return
    indexes = lambda values: [c.index for c in detect(values)]  # noqa: E731
    t = real_data.tcpd(indexes, root / "tcpd")
    d = real_data.django(indexes, root / "django_series_conda-py3.10.json.xz")
    out["tcpd"] = {k: v for k, v in t.items() if k != "rows"} | {
        "per_series": {r["name"]: {"f1": r["f1"], "cover": r["cover"], "found": r["found"]} for r in t["rows"]}}
    out["django"] = d
    print(f"\nTCPD ({t['series']} univariate series; {', '.join(t['skipped_multivariate'])} skipped as "
          f"multivariate), proofbench at its defaults, margin {real_data.MARGIN}: "
          f"F1 {t['f1']:.3f}, cover {t['cover']:.3f}")
    print(f"django ({d['histories']} histories, {d['commits']} commits): {d['change_points']} change points, "
          f"{d['per_100_commits']:.2f} per 100 commits, in {d['histories_with_any']} histories")


def main(argv: list[str] | None = None) -> None:
    """Generate the suite, score every detector, print the tables (and write JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smaller suite")
    parser.add_argument("--tuning", action="store_true", help="the tuning suite, not the evaluation's")
    parser.add_argument("--seed", type=int, default=None,
                        help=f"draw the suite from this seed instead of the evaluation's ({EVALUATION_SEED}); "
                             "not a tuning seed")
    parser.add_argument("--per-model", type=int, default=None, help=f"histories per noise model ({PER_MODEL})")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-real", action="store_true", help="skip TCPD and django")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    per_model = args.per_model or (15 if args.quick else PER_MODEL)
    seed = _seed(parser, args)
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    histories = synth.generate(per_model, seed=seed)
    found, missing = evaluate(histories, args.workers)
    tallies = tally(histories, found, missing)
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    print(f"suite: {len(histories)} histories ({per_model} per noise model, seed {seed}"
          f"{' (tuning)' if args.tuning else ''}, {sum(map(len, histories))} commits); "
          f"{wall:.0f} s wall, {cpu:.0f} s CPU\n")
    print_tables(tallies, missing)
    against = print_against_anchors(tallies)
    out = {"meta": {"per_model": per_model, "seed": seed, "tuning": args.tuning, "tolerance": TOLERANCE,
                    "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "not_run": missing},
           "detectors": {name: {key: _finite(t.summary()) for key, t in groups.items()}
                         for name, groups in tallies.items()},
           "against_best_anchor": against}
    if not args.no_real:
        real(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def _seed(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The seed the suite is drawn from: the evaluation's, the first tuning seed (`--tuning`) or
    `--seed`, which may not be a tuning seed (an evaluation on the histories the knobs were chosen
    on says nothing of histories they were not)."""
    if args.seed is None:
        return TUNING_SEEDS[0] if args.tuning else EVALUATION_SEED
    if args.tuning or args.seed in TUNING_SEEDS:
        parser.error(f"--seed {args.seed}: the detector's knobs were chosen on seeds "
                     f"{', '.join(map(str, TUNING_SEEDS))} (--tuning runs the first); evaluate on another")
    return args.seed


def _finite(summary: dict[str, float]) -> dict[str, float | None]:
    # JSON has no NaN or infinity: nothing counted is null.
    return {k: v if not isinstance(v, float) or math.isfinite(v) else None for k, v in summary.items()}


def _cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    main()
