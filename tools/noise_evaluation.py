"""Do speedups repeat? Five quiet runs of one commit and one run under a competing load.

Run: `.venv/bin/python -m tools.noise_evaluation [--runs 5] [--bench SUBJECT ...] [--profile quick]
[--out DIR] [--no-loaded] [--reanalyse]` (`make evaluate-noise`; `QUICK=1` for three subjects and
three runs; `--reanalyse` measures nothing and judges the runs already in `--out` again).
A benchmark, not a test: it prints tables (and writes `evaluation.json` in `--out`), it asserts
nothing. Run it on a quiet machine: the other processes' load is recorded per run and printed
beside every figure, so a run on a busy machine reads as such.

Each run is `proofbench run` as a user runs it (asv, ingest, the run table's JSON records:
`proofbench.reports.table`), into its own database and work directory under `--out`. The loaded
run has one busy process beside it for the whole run, on for 2-4 s and off for 2-4 s (seeded).

Measured against the targets:
- per (subject, size, variant), max/min of the quiet runs' estimates <= 1.10;
- each quiet run's 95% interval covers the median of the other quiet runs' estimates, for at
  least 90% of (comparison, run) pairs;
- at most 20% of the quiet speedups "inconclusive";
- loaded: every speedup within 10% of the quiet median, or "inconclusive"; no word flips between
  faster, slower and no significant difference;
- the wall time of each run (quick profile, all subjects: within 5 minutes on 2 cores).
Beside each comparison, how far the quiet runs lie apart (the standard deviation of their
estimates) and how wide each run said its figure was (the mean half width of its intervals):
where the first is more than about half the second, no run's interval holds the others.
Last, the variation between runs beyond what the runs' rounds show, pooled over the comparisons
(the variance of each comparison's estimates less the mean variance of its rounds' intervals,
with the profile's `between_runs` taken back out of them): the figure a profile's `between_runs`
should hold on this machine.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from proofbench import project as project_file
from proofbench.catalogue import load_catalogue
from proofbench.db.session import connect
from proofbench.machine.capture import capture
from proofbench.pipeline import runner
from proofbench.pipeline.asv import Layout
from proofbench.pipeline.generate import bench_pattern
from proofbench.profile import get_profile
from proofbench.reports import table

QUICK_SUBJECTS = ("inference.attention_kernel", "tokenization.padding_strategy", "training.fused_optimizer")
DECIDED = ("faster", "slower", "no significant difference")
SEED = 20261124


def _busy(stop, seed: int) -> None:
    # one competing process: busy 2-4 s, idle 2-4 s, until told to stop
    rng = random.Random(seed)
    while not stop.is_set():
        end = time.monotonic() + rng.uniform(2, 4)
        while time.monotonic() < end and not stop.is_set():
            sum(i * i for i in range(10_000))
        stop.wait(rng.uniform(2, 4))


@dataclass(frozen=True)
class Run:
    """One `proofbench run`: its records, wall seconds, and the other processes' mean load
    (cores, over every block of every paired round)."""

    name: str
    records: list[dict]
    seconds: float
    other_load: float | None


def _other_load(found: list[table.Line]) -> float | None:
    loads = [x for line in found if line.variant.speedup is not None and line.variant.variant != "baseline"
             for x in (line.variant.speedup.load_a, line.variant.speedup.load_b) if x is not None]
    return statistics.fmean(loads) if loads else None


def measure(name: str, out: Path, profile_name: str, bench: str | None, loaded: bool) -> Run:
    """One run into `out/name` (its own database and work directory)."""
    found = project_file.require(None)
    layout = Layout.under(found, out / name)
    catalogue = load_catalogue(found)
    engine = connect(f"sqlite:///{out / name / 'results.sqlite'}")
    stop = multiprocessing.Event()
    load = multiprocessing.Process(target=_busy, args=(stop, SEED), daemon=True) if loaded else None
    if load is not None:
        load.start()
    start = time.monotonic()
    try:
        runner.measure(engine, layout, catalogue, get_profile(profile_name, found.profiles), capture(), bench)
    finally:
        seconds = time.monotonic() - start
        stop.set()
        if load is not None:
            load.join(timeout=10)
    lines = table.lines(engine)
    return Run(name, _records(lines), seconds, _other_load(lines))


def _records(lines: list) -> list[dict]:
    # the run table's JSON records, each speedup with the variation between runs its interval holds
    records = table.as_json(lines)["records"]
    for line, record in zip(lines, records):
        if record["speedup"] is not None:
            record["speedup"]["held"] = line.variant.speedup.between_runs
    return records


def reread(name: str, out: Path, seconds: float) -> Run:
    """A run measured earlier into `out/name`, its figures derived again from its stored rounds by
    the analysis as it is now (`--reanalyse`: the same measurements, judged by today's statistics)."""
    lines = table.lines(connect(f"sqlite:///{out / name / 'results.sqlite'}"))
    return Run(name, _records(lines), seconds, _other_load(lines))


def _key(record: dict) -> tuple[str, str, str]:
    return record["subject"], record["size"], record["variant"]


def compare(quiet: list[Run], loaded: Run | None, between_runs: float = 0.0) -> dict:
    """Per comparison and overall: spread, coverage, inconclusive share, the loaded run's outcome,
    and the variation between runs beyond the rounds' intervals (each record's `held`: the
    variation between runs its interval already holds; `between_runs`: the profile's, shown)."""
    keys = sorted({_key(r) for run in quiet for r in run.records if r["speedup"] is not None})
    rows, covered, pairs, inconclusive, decided = [], 0, 0, 0, 0
    for key in keys:
        found = [next((r for r in run.records if _key(r) == key), None) for run in quiet]
        estimates = [r["speedup"]["estimate"] for r in found if r and r["speedup"] and r["speedup"]["estimate"]]
        words = [r["verdict"] if r else None for r in found]
        row = {"subject": key[0], "size": key[1], "variant": key[2], "estimates": estimates, "words": words,
               "max_over_min": max(estimates) / min(estimates) if estimates else None, "covers": [],
               **_spreads(found, estimates)}
        for i, r in enumerate(found):
            others = [e for j, e in enumerate(estimates) if j != i]
            if r is None or not r["speedup"] or r["speedup"]["low"] is None or not others:
                continue
            hit = r["speedup"]["low"] <= statistics.median(others) <= r["speedup"]["high"]
            row["covers"].append(hit)
            covered, pairs = covered + hit, pairs + 1
        inconclusive += sum(w == "inconclusive" for w in words)
        decided += sum(w is not None for w in words)
        row.update(_loaded(loaded, key, estimates, words) if loaded else {})
        rows.append(row)
    return {"rows": rows, "coverage": covered / pairs if pairs else None,
            "inconclusive_share": inconclusive / decided if decided else None,
            "spread_ok": sum(1 for r in rows if r["max_over_min"] and r["max_over_min"] <= 1.10), "comparisons": len(rows),
            "loaded_ok": sum(1 for r in rows if r.get("loaded_ok")) if loaded else None,
            "flips": sum(1 for r in rows if r.get("flip")) if loaded else None,
            "between_runs": between_runs, "beyond_rounds": _pooled([r["excess_variance"] for r in rows])}


def _spreads(found: list[dict | None], estimates: list[float]) -> dict:
    """How far the runs' estimates lie apart (the standard deviation of their logs, as a
    fraction) beside how wide each run said its own figure was (the mean half width of the 95%
    intervals, as a fraction): an interval holds the other runs' figures only where the second is
    about twice the first or more. And the variance of the log estimates beyond what the rounds'
    intervals hold, each record's `held` (the variation between runs it holds) taken back out of
    them (see the module docstring; None with fewer than two runs that gave an interval)."""
    intervals = [r["speedup"] for r in found if r and r["speedup"] and r["speedup"]["estimate"]
                 and r["speedup"]["low"] and r["speedup"]["high"]]
    widths = [math.log(s["high"] / s["low"]) / 2 for s in intervals]
    between = statistics.stdev(math.log(e) for e in estimates) if len(estimates) > 1 else None
    own = [max(0.0, (w / 1.96) ** 2 - math.log1p(s["held"]) ** 2) for w, s in zip(widths, intervals)]
    excess = (statistics.variance([math.log(s["estimate"]) for s in intervals]) - statistics.fmean(own)
              if len(intervals) > 1 else None)
    return {"between_runs_sd": math.expm1(between) if between is not None else None,
            "mean_half_width": math.expm1(statistics.fmean(widths)) if widths else None,
            "excess_variance": excess}


def _pooled(excess: list[float | None]) -> float | None:
    # the comparisons' variances beyond their intervals, pooled, as a standard deviation (a fraction)
    terms = [x for x in excess if x is not None]
    return math.expm1(math.sqrt(max(0.0, statistics.fmean(terms)))) if terms else None


def _loaded(run: Run, key: tuple, estimates: list[float], words: list) -> dict:
    r = next((x for x in run.records if _key(x) == key), None)
    if r is None or not r["speedup"] or not estimates:
        return {"loaded": None, "loaded_word": None, "loaded_ok": False, "flip": False}
    median = statistics.median(estimates)
    within = r["speedup"]["estimate"] is not None and abs(r["speedup"]["estimate"] / median - 1) <= 0.10
    flip = r["verdict"] in DECIDED and any(w in DECIDED and w != r["verdict"] for w in words)
    return {"loaded": r["speedup"]["estimate"], "loaded_word": r["verdict"],
            "loaded_ok": within or r["verdict"] == "inconclusive", "flip": flip}


def _print(quiet: list[Run], loaded: Run | None, result: dict, machine: str) -> None:
    print(f"machine {machine}")
    for run in [*quiet, *([loaded] if loaded else [])]:
        load = f"{run.other_load:.2f} cores" if run.other_load is not None else "unread"
        print(f"  {run.name}: {run.seconds:.0f} s wall, other processes' load during the rounds: {load}")
    head = "| subject | size | variant | " + " | ".join(r.name for r in quiet) + \
        " | max/min | sd between runs | mean half width | covers |" + (" loaded |" if loaded else "")
    print("\n" + head + "\n|" + "---|" * (head.count("|") - 1))
    for row in result["rows"]:
        cells = [f"{e:.3f} {(w or '')[:4]}" for e, w in zip(row["estimates"], row["words"])]
        spread = f"{row['max_over_min']:.3f}" if row["max_over_min"] else "—"
        sd, width = (f"{row[k]:.1%}" if row[k] is not None else "—" for k in ("between_runs_sd", "mean_half_width"))
        cover = f"{sum(row['covers'])}/{len(row['covers'])}"
        tail = f" {row['loaded']:.3f} {row['loaded_word']} |" if loaded and row.get("loaded") else (" — |" if loaded else "")
        print(f"| {row['subject']} | {row['size']} | {row['variant']} | " + " | ".join(cells) +
              f" | {spread} | {sd} | {width} | {cover} |" + tail)
    print(f"\nmax/min <= 1.10: {result['spread_ok']} of {result['comparisons']} comparisons")
    if result["coverage"] is not None:
        print(f"coverage of the other runs' median: {result['coverage']:.0%} (target >= 90%)")
    if result["inconclusive_share"] is not None:
        print(f"inconclusive: {result['inconclusive_share']:.0%} of quiet speedups (target <= 20%)")
    if loaded:
        print(f"loaded: {result['loaded_ok']} of {result['comparisons']} within 10% of the quiet median or "
              f"inconclusive; {result['flips']} word flip(s)")
    print(f"wall time per quiet run: {', '.join(f'{r.seconds:.0f} s' for r in quiet)} (target <= 300 s)")
    if result.get("beyond_rounds") is not None:
        print(f"between runs, beyond the rounds' intervals: ±{result['beyond_rounds']:.1%} "
              f"(the profile's between_runs: ±{result['between_runs']:.1%})")
    beyond = [(r, math.expm1(math.sqrt(r["excess_variance"]))) for r in result["rows"]
              if r["excess_variance"] is not None and r["excess_variance"] > 0]
    if beyond:  # what [<profile>.between_runs_by_subject] would add to what the intervals hold
        print("moved beyond what their intervals hold: " + ", ".join(
            f"{r['subject']} {r['variant']} ±{x:.1%}" for r, x in sorted(beyond, key=lambda b: -b[1])))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bench", nargs="*", default=None, help="subjects (default: all)")
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--out", type=Path, default=Path(".proofbench/noise-evaluation"))
    parser.add_argument("--no-loaded", action="store_true", help="skip the run under a competing load")
    parser.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_SUBJECTS)}, three runs")
    parser.add_argument("--reanalyse", action="store_true",
                        help="measure nothing: derive the figures of the runs in --out again from their stored rounds")
    args = parser.parse_args(argv)
    subjects = QUICK_SUBJECTS if args.quick else args.bench
    runs = 3 if args.quick else args.runs
    registry = load_catalogue(project_file.require(None)).registry
    bench = "|".join(bench_pattern(registry, s) for s in subjects) if subjects else None
    out = args.out.resolve()
    if args.reanalyse:
        earlier = [reread(r["name"], out, r["seconds"])
                   for r in json.loads((out / "evaluation.json").read_text())["runs"]]
        quiet = [r for r in earlier if r.name.startswith("quiet-")]
        loaded = next((r for r in earlier if r.name == "loaded"), None)
    else:
        quiet = [measure(f"quiet-{i + 1}", out, args.profile, bench, loaded=False) for i in range(runs)]
        loaded = None if args.no_loaded else measure("loaded", out, args.profile, bench, loaded=True)
    result = compare(quiet, loaded, get_profile(args.profile, project_file.require(None).profiles).between_runs)
    _print(quiet, loaded, result, capture().name)
    document = {"runs": [{"name": r.name, "seconds": r.seconds, "other_load": r.other_load, "records": r.records}
                         for r in [*quiet, *([loaded] if loaded else [])]], "result": result}
    (out / "evaluation.json").write_text(json.dumps(document, indent=2))
    print(f"\nwritten: {out / 'evaluation.json'}")


if __name__ == "__main__":
    main()
