"""proofbench on a published asv suite: ingest, check and report timed on OpenMathLib's BLAS results,
and what `check` finds next to what asv's own step detection finds on the same ordered series.

    .venv/bin/python -m tools.suite_evidence [--keep DIR] [--threshold 0.05]

The BLAS set (`shared/data/asv-results/blas-results.tar.xz`: 269 files, 3 machines, 92 commits)
is unpacked into a temporary folder. Each proofbench command runs as its own process (printed:
its wall clock, CPU time and peak RSS from wait4, and the load average after it), in this order: ingest, ingest again
(nothing new), check (recorded), report. There is no repository, so commits are ordered by the
dates asv recorded.

asv's side is `asv publish`'s regression detection, called as asv calls it: each series' values
and weights read with asv's own loader (`asv.results.Results.load`, weights by
`asv._stats.get_weight` from the 99% interval asv stored), in the same commit order,
`asv.step_detect.detect_steps` then `detect_regressions` with asv's default threshold (5%;
`regressions_thresholds`). asv reports the upward steps that leave the newest value worse than
the best one; proofbench's open regressions (new or still open, not resolved) are the
comparable set. A pair agrees when both name the same series and the same commit; the rest is
listed, each with both sides' view of it.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tools.real_data import shared_data


def _run(argv: list[str]) -> tuple[float, float, float, str, str]:
    """(wall seconds, CPU seconds, peak RSS MiB, stdout, stderr) of one proofbench command in its own process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "proofbench", *argv], stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here, so its own rusage is read
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read(), err.read()


def _asv_series(results: Path, order: list[str]) -> dict[tuple, tuple[list, list]]:
    """(machine, env, benchmark, version, params) -> (values, weights) in `order`, read by asv's loader."""
    from asv import _stats
    from asv.results import Results

    rank = {h: i for i, h in enumerate(order)}
    points: dict[tuple, dict[int, tuple]] = defaultdict(dict)
    for path in sorted(results.glob("*/*.json")):
        if path.name in ("machine.json", "benchmarks.json"):
            continue
        loaded = Results.load(str(path))
        for name in loaded.get_all_result_keys():
            lists = loaded.get_result_params(name)
            version = loaded.benchmark_version.get(name)
            combos = list(itertools.product(*lists)) if lists else [()]
            values = loaded.get_result_value(name, lists)
            stats = loaded.get_result_stats(name, lists)
            for combo, value, stat in zip(combos, values, stats):
                key = (loaded.params["machine"], loaded.env_name, name, version, combo)
                points[key][rank[loaded.commit_hash]] = (value, _stats.get_weight(stat))
    out = {}
    for key, by_rank in points.items():
        ranks = sorted(by_rank)
        out[key] = ([by_rank[r][0] for r in ranks], [by_rank[r][1] for r in ranks], ranks)
    return out


def _asv_regressions(series: dict, threshold: float) -> dict[tuple, list[int]]:
    from asv.step_detect import detect_regressions, detect_steps

    found = {}
    for key, (values, weights, ranks) in series.items():
        _, _, jumps = detect_regressions(detect_steps(values, weights), threshold)
        if jumps:
            found[key] = [ranks[after] for _, after, _, _ in jumps]  # the first commit at the worse level
    return found


def _shown(value: str) -> str:
    for quote in ("'", '"'):
        if len(value) > 1 and value[0] == value[-1] == quote:
            return value[1:-1]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the unpacked results, database and site here")
    parser.add_argument("--threshold", type=float, default=0.05, help="asv's regressions_thresholds (default 5%%)")
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        raise SystemExit("shared/data is not here: the BLAS results cannot be read")
    work = args.keep or Path(tempfile.mkdtemp(prefix="suite-evidence-"))
    work.mkdir(parents=True, exist_ok=True)
    with tarfile.open(data / "asv-results" / "blas-results.tar.xz") as archive:
        archive.extractall(work / "blas", filter="data")
    results, url = work / "blas" / "results", f"sqlite:///{work / 'blas.sqlite'}"
    os.chdir(work)  # no project here: nothing but the results is read
    for label, argv in (("ingest", ["ingest", str(results), "--db", url]),
                        ("ingest again", ["ingest", str(results), "--db", url]),
                        ("check", ["check", "--format", "json", "--db", url]),
                        ("report", ["report", "--out", str(work / "site"), "--db", url])):
        wall, cpu, rss, out, err = _run(argv)
        print(f"{label:13} {wall:6.2f} s wall {cpu:6.2f} s CPU  peak RSS {rss:4.0f} MiB  load {os.getloadavg()[0]:.1f}"
              f"  {' '.join(err.split())[:90]}")
        if label == "check":
            checked = json.loads(out)
    _compare(checked, results, url, args.threshold)


def _compare(checked: dict, results: Path, url: str, threshold: float) -> None:
    from sqlalchemy.orm import Session

    from proofbench.analysis import series
    from proofbench.db.session import connect

    with Session(connect(url)) as session:
        order = series.order(session, "main")
        hashes = [c.hash for c in sorted(order.commits.values(), key=lambda c: c.rank)]
    ours = {}
    for a in checked["alerts"]:
        if a["kind"] == "regression" and a["state"] in ("new", "open"):
            s = a["series"]
            ours[(s["machine"], s["environment"], s["benchmark"], tuple(s["params"].values()))] = \
                hashes.index(a["commit"]["hash"])
    asv_series = _asv_series(results, hashes)
    theirs = {}
    for (machine, env, name, _, combo), ranks in _asv_regressions(asv_series, threshold).items():
        theirs[(machine, env, name, tuple(_shown(v) for v in combo))] = ranks
    print(f"\ncheck: {checked['counts']['series']} series, {len(ours)} open regression(s); asv (threshold "
          f"{threshold:.0%}): {sum(len(r) for r in theirs.values())} regression(s) in {len(theirs)} series")
    for key in sorted(set(ours) | set(theirs)):
        mine, asv = ours.get(key), theirs.get(key, [])
        verdict = "agree" if mine is not None and mine in asv else "check only" if mine is not None else "asv only"
        print(f"{verdict:10} {key[0]} {key[2]} {key[3]}: check at #{mine if mine is not None else '-'}, "
              f"asv at {['#%d' % r for r in asv] or '-'}")
        values = next((v for k, v in asv_series.items() if (k[0], k[1], k[2], tuple(_shown(x) for x in k[4])) == key),
                      None)
        if values is not None:
            shown = " ".join(f"{v * 1e6:.3g}" if v is not None else "-" for v in values[0])
            print(f"           values (µs, by rank {values[2][0]}..{values[2][-1]}): {shown}")


if __name__ == "__main__":
    main()
