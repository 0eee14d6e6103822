"""How long the report takes to render a large database: a synthetic one, built with bulk inserts.

    .venv/bin/python -m tools.render_benchmark [--commits 1000] [--benchmarks 100] [--machines 3]

A benchmark here is what asv and db.models call one: one metric of one subject (time_call,
track_items, track_peak_memory, track_quality), so 100 benchmarks are 25 subjects, each with a
baseline and an optimized variant. Every commit is measured on every machine: 1000 x 100 x 3
gives 600,000 result rows. Histories carry steps up and down (so there are change points to
find), a few failed runs and an equivalence failure. The database is a SQLite file in a
temporary folder (kept with --keep DIR); the time printed is that of `render()` alone: wall
clock, and CPU time (this process, and the worker processes change-point detection runs in),
with the load average, since other work on the machine stretches the wall clock. With --check
the nightly check runs first (not timed) and the report reads its stored alerts.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from proofbench.db.models import Benchmark, ClaimRow, Commit, Environment, Machine
from proofbench.db.session import connect
from proofbench.reports.matrix import AREA_ORDER as AREAS
from proofbench.reports.render import render

METHODS = (("time_call", "time", "seconds", False), ("track_items", "items", "sequences", True),
           ("track_peak_memory", "peak_memory", "bytes", False), ("track_quality", "max_abs_diff", "", False))
VARIANTS = ("baseline", "optimized")
SAMPLES = 7
_START = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)


def _machines(count: int) -> list[dict]:
    out = []
    for i in range(count):
        gpu = i % 3 == 2
        profile = {"format": 1, "name": f"bench-{i}", "hostname": f"bench-{i}", "cpu_model": f"Synthetic CPU {i}",
                   "arch": "x86_64", "physical_cores": 8 * (i + 1), "logical_cores": 16 * (i + 1),
                   "cpu_freq_min_mhz": 1500.0, "cpu_freq_max_mhz": 3500.0, "cpu_freq_current_mhz": 2900.0,
                   "cpu_governor": "performance", "ram_total_bytes": 2**36 * (i + 1), "os": "Linux",
                   "os_release": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.1.0", "python_version": "3.11.7",
                   "torch_version": "2.13.0", "cuda_version": "12.4" if gpu else None,
                   "cudnn_version": 90100 if gpu else None, "torch_threads": 8,
                   "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_bytes": 85520809984,
                             "driver_version": "550.90.07", "cuda_driver_version": "12.4",
                             "compute_capability": [9, 0], "power_limit_mw": 700000, "max_sm_clock_mhz": 1980,
                             "max_memory_clock_mhz": 2619, "uuid": None}] if gpu else [],
                   "gpu_note": None if gpu else "no GPU: synthetic machine", "fingerprint": f"{i:016x}"}
        out.append({"name": f"bench-{i}", "fingerprint": f"{i:016x}", "profile": profile})
    return out


def _subjects(benchmarks: int) -> list[tuple[str, str, str]]:
    """(subject key, area, asv class name) for benchmarks // 4 subjects."""
    count = max(1, benchmarks // len(METHODS))
    return [(f"{AREAS[i % len(AREAS)]}.synthetic_{i:03d}", AREAS[i % len(AREAS)], f"Synthetic{i:03d}")
            for i in range(count)]


def _levels(rng: np.random.Generator, commits: int, base: float, cv: float) -> np.ndarray:
    """Per-commit levels of one series: log-normal noise around `base` with 0-2 steps."""
    level = np.full(commits, base)
    for _ in range(rng.integers(0, 3)):
        at = int(rng.integers(commits // 10, commits - 10)) if commits > 20 else 0
        level[at:] *= rng.choice([0.75, 0.85, 1.15, 1.3])
    return level * np.exp(rng.normal(0.0, cv, commits))


def _series_rows(rng, ids: dict, commits: list[int], subject_index: int, variant: str) -> list[dict]:
    n = len(commits)
    speed = 1.0 if variant == "baseline" else 1.0 / (1.5 + subject_index % 5)
    times = _levels(rng, n, 1e-3 * (1 + subject_index % 7) * speed, 0.02)
    memory = _levels(rng, n, 2**20 * (50 + subject_index) * (1.0 if variant == "baseline" else 0.6), 0.004)
    broken = subject_index % 11 == 3 and variant == "optimized"
    rows = []
    for j, commit in enumerate(commits):
        failed = rng.random() < 0.002
        samples = (times[j] * np.exp(rng.normal(0.0, 0.03, SAMPLES))).tolist()
        common = {"machine_id": ids["machine"], "commit_id": commit, "environment_id": ids["env"],
                  "params": {"variant": variant, "size": "small"}, "params_key": json.dumps([variant, "small"]),
                  "profile": "quick", "threads": 8, "other_load_cores": 0.05, "busy": False,
                  "started_at": _START + dt.timedelta(hours=j), "reason": "", "number": 1,
                  "samples": None, "equivalent": None, "duration": 1.0}
        rows.append({**common, "benchmark_id": ids["time_call"], "status": "failed" if failed else "ok",
                     "value": None if failed else float(np.median(samples)), "samples": None if failed else samples,
                     "reason": "failed: synthetic timeout after 120 s" if failed else ""})
        rows.append({**common, "benchmark_id": ids["track_items"], "status": "ok", "value": 1000.0})
        rows.append({**common, "benchmark_id": ids["track_peak_memory"], "status": "ok", "value": float(memory[j])})
        quality = {"status": "skipped", "value": None} if variant == "baseline" else \
            {"status": "ok", "value": 0.5 if broken else 1e-6, "equivalent": not broken}
        rows.append({**common, "benchmark_id": ids["track_quality"], **quality})
    return rows


def _benchmark_rows(subject: str, area: str, klass: str) -> list[dict]:
    details = {"description": f"synthetic workload {subject}",
               "variants": {"baseline": {"description": "the naive way", "requires": []},
                            "optimized": {"description": "the documented way", "requires": []}},
               "equivalence": {"metric": "max_abs_diff", "tolerance": 1e-3, "higher_is_better": False,
                               "description": "outputs agree within 1e-3"}, "rates": []}
    return [{"name": f"{area}.{klass}.{method}", "version": "1", "subject": subject, "area": area, "metric": metric,
             "unit": unit, "higher_is_better": better, "item": "sequence", "param_names": ["variant", "size"],
             "details": details} for method, metric, unit, better in METHODS]


def build(url: str, commits: int, benchmarks: int, machines: int, seed: int = 0) -> int:
    """Fill a new database at `url`; returns the number of result rows."""
    engine = connect(url)
    rng = np.random.default_rng(seed)
    subjects = _subjects(benchmarks)
    with Session(engine) as session, session.begin():
        session.execute(insert(Machine), _machines(machines))
        session.execute(insert(Environment), [{"name": "existing-py3.11", "python": "3.11", "requirements": {}}])
        session.execute(insert(Commit), [{"hash": f"{rng.integers(0, 2**63):016x}{i:024x}",
                                          "subject": f"Synthetic change {i}: tune the {AREAS[i % 5]} path",
                                          "author": "synthetic", "committed_at": _START + dt.timedelta(hours=i),
                                          "position": i, "branch": "main"} for i in range(commits)])
        for subject, area, klass in subjects:
            session.execute(insert(Benchmark), _benchmark_rows(subject, area, klass))
        session.execute(insert(ClaimRow), _claims(subjects))
    return _results(engine, rng, subjects, commits, machines)


def _claims(subjects: list[tuple[str, str, str]]) -> list[dict]:
    return [{"id": f"{subject}/speed", "subject": subject, "variant": "optimized", "source": "000_synthetic.txt",
             "quote": f"{2 + i % 4}x faster", "kind": "speedup", "metric": "time", "low": float(2 + i % 4),
             "high": float(2 + i % 4), "device": "gpu" if i % 6 == 5 else "any", "note": ""}
            for i, (subject, _, _) in enumerate(subjects) if i % 3 == 0]


_COLUMNS = ("benchmark_id", "machine_id", "commit_id", "environment_id", "params", "params_key", "status", "reason",
            "value", "samples", "number", "started_at", "duration", "other_load_cores", "busy", "threads",
            "profile", "equivalent")


def _row(r: dict) -> tuple:
    # JSON and timestamps as SQLAlchemy stores them in SQLite, so the driver's executemany can take them
    out = {**r, "params": json.dumps(r["params"]),
           "samples": None if r["samples"] is None else json.dumps(r["samples"]),
           "started_at": r["started_at"].strftime("%Y-%m-%d %H:%M:%S.%f")}
    return tuple(out.get(c) for c in _COLUMNS)


def _results(engine, rng, subjects, commits: int, machines: int) -> int:
    """Insert every result row with the driver's executemany, one transaction per machine."""
    total = 0
    with Session(engine) as session:
        bench_ids = {name: i for i, name in session.execute(select(Benchmark.id, Benchmark.name))}
        commit_ids = [i for (i,) in session.execute(select(Commit.id).order_by(Commit.position))]
        machine_ids = [i for (i,) in session.execute(select(Machine.id).order_by(Machine.id))]
        env_id = session.scalar(select(Environment.id))
    sql = f"INSERT INTO results ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
    for machine_id in machine_ids[:machines]:
        rows = []
        for s, (subject, area, klass) in enumerate(subjects):
            ids = {"machine": machine_id, "env": env_id,
                   **{m: bench_ids[f"{area}.{klass}.{m}"] for m, _, _, _ in METHODS}}
            rows += [_row(r) for v in VARIANTS for r in _series_rows(rng, ids, commit_ids, s, v)]
        with engine.begin() as connection:
            connection.exec_driver_sql(sql, rows)
        total += len(rows)
    return total


def _check(engine) -> None:
    from proofbench.analysis.check import run_check

    started = time.perf_counter()
    report = run_check(engine, "main")
    print(f"nightly check: {report.series} series, {len(report.findings)} alerts stored in "
          f"{time.perf_counter() - started:.1f} s")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_render(engine, site: Path) -> None:
    load = os.getloadavg()[0]
    started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    index = render(engine, site)
    seconds = time.perf_counter() - started
    cpu, children = time.process_time() - cpu, _children_cpu() - children
    files = [p for p in site.rglob("*") if p.is_file()]
    print(f"rendered {len(files)} files ({sum(p.stat().st_size for p in files) / 2**20:.1f} MiB) to {index.parent}")
    print(f"render time: {seconds:.2f} s wall; CPU {cpu:.2f} s in this process + {children:.2f} s in "
          f"detection workers; load average {load:.1f} on {os.cpu_count()} CPUs when it started")


def main(argv: list[str] | None = None) -> int:
    """Build the synthetic database, render it once, print the time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--benchmarks", type=int, default=100)
    parser.add_argument("--machines", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the database and site in DIR and keep them")
    parser.add_argument("--check", action="store_true",
                        help="run the nightly check (harness/check.py) first, so the report reads stored alerts "
                             "instead of detecting change points itself")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        db = where / "render-benchmark.sqlite"
        for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            stale.unlink(missing_ok=True)
        started = time.perf_counter()
        rows = build(f"sqlite:///{db}", args.commits, args.benchmarks, args.machines)
        print(f"built {db.name}: {args.commits} commits x {args.benchmarks} benchmarks x {args.machines} machines "
              f"= {rows} result rows in {time.perf_counter() - started:.1f} s")
        engine = connect(f"sqlite:///{db}")
        if args.check:
            _check(engine)
        _timed_render(engine, where / "site")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
