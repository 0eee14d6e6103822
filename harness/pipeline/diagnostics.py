"""Diagnostics: what the sidecar (`proofbench.measure.sidecar`) says of each result ingested.

Benchmark processes, and proofbench after reading asv's output, append records to one sidecar
file per project; each result takes the words of the records of its commit, environment,
benchmark and parameters that its own run wrote: why it failed or was skipped, whether its
answer was equivalent, its paired rounds, the load beside it. Several runs of one commit (a
history, a check measuring again, a bisection) share the file, so a record an earlier run
wrote is left out where the result says when its benchmark started.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from proofbench.measure import gpu_watch, sidecar
from proofbench.pipeline import asv_log
from proofbench.pipeline.results_file import Point, ResultsFile


def load(path: Path | None) -> dict[tuple, list[sidecar.Record]]:
    """Sidecar records grouped by (commit, env, benchmark, params)."""
    grouped: dict[tuple, list[sidecar.Record]] = {}
    for record in sidecar.read(path) if path else ():
        grouped.setdefault(record.key(), []).append(record)
    return grouped


def diagnosed(point: Point, parsed: ResultsFile, diagnostics: dict) -> dict:
    """What the sidecar says of one result: its reason, equivalence, rounds and run conditions.

    Records of its method, and class-level ones (setup skipped or failed), in file order, of
    the run that measured it (`_this_run`); the writer may not have known the environment's
    name (asv's existing environment)."""
    klass, _, method = point.benchmark.rpartition(".")
    out: dict = {}
    envs = dict.fromkeys((parsed.env, ""))
    records = [r for params in (point.params, ()) for env in envs
               for r in diagnostics.get((parsed.commit, env, klass, params), [])
               if r.details.get("method") in (None, method) and _this_run(r, point)]
    for record in records:
        if record.details.get("source") == asv_log.LOG_SOURCE:
            continue
        if "equivalent" in record.details:
            out["equivalent"] = bool(record.details["equivalent"])
        if "rounds" in record.details:  # a paired measurement's raw record (measure.pairing)
            out["rounds"] = record.details["rounds"]
        if record.status == "ok" and "threads" in record.details:
            out.update(other_load_cores=record.details.get("other_load_cores"), busy=record.details.get("busy"),
                       threads=record.details.get("threads"), profile=record.details.get("profile"),
                       gpu=gpu_watch.record(record.details.get("gpu")))
    reason = _reason(records, point.status == "failed")
    if reason:
        out["reason"] = reason
    return out


def _this_run(record: sidecar.Record, point: Point) -> bool:
    # a record written while or after this result's benchmark ran, not by an earlier run of its
    # commit (another command's run shares the sidecar); one without a time counts
    try:
        at = dt.datetime.fromisoformat(record.at) if record.at else None
    except (TypeError, ValueError):  # a line some other writer made: it counts, as one without a time
        return True
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=dt.timezone.utc)  # proofbench writes UTC
    return at is None or point.started_at is None or at >= point.started_at - dt.timedelta(seconds=2)


def _reason(records: list[sidecar.Record], failed: bool) -> str:
    # The benchmark process's own word first (the last one), then what asv printed about this
    # parameter set, then what it printed about the whole benchmark; asv's only for a failure.
    ranked: dict[int, str] = {}
    for record in records:
        from_log = record.details.get("source") == asv_log.LOG_SOURCE
        if record.status in ("failed", "skipped") and record.reason and (failed or not from_log):
            ranked[int(from_log) + int(not record.params)] = record.reason
    return ranked[min(ranked)] if ranked else ""
