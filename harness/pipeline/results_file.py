"""Reading asv's results files (format version 2) strictly, with one-line errors.

A results file is `.asv/results/<machine>/<commit>-<env>.json`; each benchmark row holds,
per parameter combination, asv's summary value (None = failed, NaN = skipped), the raw
samples when `--record-samples` was on, and timing statistics.
"""
from __future__ import annotations

import ast
import datetime as dt
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proofbench.errors import InputError

SUPPORTED_VERSION = 2


@dataclass(frozen=True)
class Point:
    """One parameter combination of one benchmark in a results file."""

    benchmark: str
    params: tuple[str, ...]
    value: float | None  # None: failed; NaN: skipped
    samples: tuple[float, ...] | None
    number: int | None
    version: str
    started_at: dt.datetime | None
    duration: float | None

    @property
    def status(self) -> str:
        if self.value is None:
            return "failed"
        return "skipped" if math.isnan(self.value) else "ok"


@dataclass(frozen=True)
class ResultsFile:
    """The parsed content of one asv results file."""

    path: Path
    machine: str
    commit: str
    env: str
    python: str
    requirements: dict
    machine_params: dict
    points: tuple[Point, ...]


def _param_value(text: str) -> str:
    # asv stores parameter values as their repr ("'baseline'"); keep the plain value.
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return str(value)


def _number(path: Path, where: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{path}: {where}: expected a number or null, got {type(value).__name__}")
    return float(value)


def _finite(path: Path, where: str, value: Any) -> float | None:
    # Where NaN means nothing (a raw sample, a duration), it is refused rather than stored.
    number = _number(path, where, value)
    if number is not None and not math.isfinite(number):
        raise InputError(f"{path}: {where}: {number} is not a valid measurement (expected a finite number)")
    return number


def _count(path: Path, where: str, value: Any) -> int | None:
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value != int(value) or value < 1):
        raise InputError(f"{path}: {where}: expected a positive whole number or null, got {value!r}")
    return int(value)


def _timestamp(ms: Any) -> dt.datetime | None:
    if not isinstance(ms, (int, float)):
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def _load_json(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = json.loads(text, parse_constant=lambda c: float(c) if c == "NaN" else _bad_constant(path, c))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                         f"truncated or not an asv results file") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object (an asv results file)")
    return data


def _bad_constant(path: Path, constant: str) -> float:
    raise InputError(f"{path}: {constant} is not a valid measurement (expected a finite number, NaN or null)")


def read(path: Path) -> ResultsFile:
    """Parse and validate one results file; any problem raises InputError naming it."""
    data = _load_json(path)
    version = data.get("version")
    if version != SUPPORTED_VERSION:
        raise InputError(f"{path}: asv results format version {version!r} is not supported "
                         f"(expected {SUPPORTED_VERSION}; re-run with asv 0.6)")
    for key in ("commit_hash", "env_name", "params", "result_columns", "results"):
        if key not in data:
            raise InputError(f"{path}: missing key {key!r} (not an asv results file?)")
    columns = data["result_columns"]
    if not isinstance(columns, list) or "result" not in columns or "params" not in columns:
        raise InputError(f"{path}: 'result_columns' must list at least 'result' and 'params'")
    if not isinstance(data["results"], dict):
        raise InputError(f"{path}: 'results' must map benchmark names to rows")
    points = []
    for name, row in data["results"].items():
        if not isinstance(row, list):
            raise InputError(f"{path}: benchmark {name!r}: expected a row (a list), got {type(row).__name__}")
        points.extend(_points(path, name, dict(zip(columns, row))))
    params = data["params"] if isinstance(data["params"], dict) else {}
    return ResultsFile(path=path, machine=str(params.get("machine", path.parent.name)),
                       commit=str(data["commit_hash"]), env=str(data["env_name"]),
                       python=str(data.get("python", "")), requirements=data.get("requirements") or {},
                       machine_params=params, points=tuple(points))


def _points(path: Path, name: str, row: dict) -> list[Point]:
    where = f"benchmark {name!r}"
    param_lists = row.get("params") or []
    if not isinstance(param_lists, list) or not all(isinstance(p, list) for p in param_lists):
        raise InputError(f"{path}: {where}: 'params' must be a list of lists of values")
    combos = list(itertools.product(*param_lists)) if param_lists else [()]
    values = row.get("result")
    if values is None:
        values = [None] * len(combos)  # asv writes one null when every combination failed
    if not isinstance(values, list) or len(values) != len(combos):
        raise InputError(f"{path}: {where}: 'result' must list one value per parameter combination "
                         f"({len(combos)} expected)")
    samples = row.get("samples") or [None] * len(combos)
    numbers = (row.get("stats_number") or [None] * len(combos))
    for column, listed in (("samples", samples), ("stats_number", numbers)):
        if not isinstance(listed, list) or len(listed) != len(combos):
            raise InputError(f"{path}: {where}: '{column}' must list one entry per parameter combination "
                             f"({len(combos)} expected)")
    duration = _finite(path, f"{where} duration", row.get("duration"))
    out = []
    for i, combo in enumerate(combos):
        value = _number(path, f"{where} result #{i + 1}", values[i])
        sample = samples[i]
        if sample is not None:
            if not isinstance(sample, list):
                raise InputError(f"{path}: {where}: samples #{i + 1}: expected a list of numbers")
            sample = tuple(_finite(path, f"{where} raw sample", s) for s in sample)
            if any(s is None for s in sample):
                raise InputError(f"{path}: {where}: a raw sample is null")
        out.append(Point(benchmark=name, params=tuple(_param_value(p) for p in combo), value=value,
                         samples=sample, number=_count(path, f"{where} stats_number #{i + 1}", numbers[i]),
                         version=str(row.get("version") or ""), started_at=_timestamp(row.get("started_at")),
                         duration=duration))
    return out


def find(results_dir: Path) -> list[Path]:
    """Every results file under an asv results directory (machine.json and benchmarks.json excluded)."""
    skip = {"machine.json", "benchmarks.json"}
    return sorted(p for p in results_dir.glob("*/*.json") if p.name not in skip and not p.name.startswith("proofbench-"))
