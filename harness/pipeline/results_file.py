"""Reading asv's results files strictly: format 2 as asv writes it, format 1 through asv's own converter.

A results file is `<results>/<machine>/<commit>-<env>.json`; each benchmark row holds, per
parameter combination, asv's summary value (None = failed, NaN = skipped), the raw samples
when `--record-samples` was on, and timing statistics. Everything read here is checked before
anything is stored: a value that a database column could not hold, or that asv itself would
not write, refuses the file in one line naming the file, the benchmark and the field. asv's
own statistics columns (`stats_ci_99_a`, ...) are not read: a non-finite value there is asv's
business, never a reason to refuse a file.
"""
from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proofbench import git
from proofbench.errors import InputError

SUPPORTED_VERSION = 2
MAX_BYTES = 256 * 2**20  # a results file larger than this is not one asv wrote
MAX_COMBINATIONS = 100_000  # parameter combinations of one benchmark
MAX_NUMBER = 2**31 - 1  # stats_number: an integer column
MAX_MAGNITUDE = 1e100  # beyond it a value is no measurement, and differences of values overflow (1e308 - -1e308)
MAX_PARAM = 1000  # characters of one parameter value's repr
MAX_PARAMS_KEY = 2000  # characters of one combination written as JSON (the results' key)
LIMITS = {"machine": 200, "env_name": 1000, "benchmark": 1000, "version": 200, "python": 4000}
_LATEST_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last instant a timestamp column holds
_SHOWN_AS = (re.compile(r"^'(.+)'$", re.S), re.compile(r'^"(.+)"$', re.S), re.compile(r"^<class '(.+)'>$"))
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # NUL (PostgreSQL's text has none), lone surrogates (not UTF-8)
_SKIP = {"machine.json", "benchmarks.json"}


@dataclass(frozen=True)
class Point:
    """One parameter combination of one benchmark in a results file."""

    benchmark: str
    params: tuple[str, ...]  # each value as asv shows it: a string's repr without its quotes
    key: str  # the combination as stored: its values as a JSON list
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
class Row:
    """One benchmark's row of a results file: its asv version and parameter lists (reprs)."""

    version: str
    params: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class ResultsFile:
    """The parsed content of one asv results file.

    `date` is the commit's date as asv recorded it; `rows` holds each benchmark's version and
    parameter lists, from which its points were made.
    """

    path: Path
    machine: str
    commit: str
    env: str
    python: str
    requirements: dict
    machine_params: dict
    date: dt.datetime | None
    rows: dict[str, Row]
    points: tuple[Point, ...]


class _Where:
    """What a message names: the file, and the benchmark and field inside it."""

    def __init__(self, path: Path, benchmark: str | None = None) -> None:
        self.path, self.benchmark = path, benchmark

    def error(self, field: str, problem: str) -> InputError:
        inside = f"benchmark {_shown(self.benchmark)}: " if self.benchmark is not None else ""
        return InputError(f"{self.path}: {inside}{field}: {problem}")


def _shown(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def load_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file; InputError for anything else (a directory, a FIFO, a
    device, a dangling link or a link loop) without waiting on it, or for a file over `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode) else "a special file"
        raise InputError(f"{path}: not a regular file ({kind})")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{path}: larger than {limit // 2**20} MiB; not a file asv writes")
    return data


def _unique_keys(path: Path):
    def hook(pairs: list[tuple[str, Any]]) -> dict:
        out: dict = {}
        for key, value in pairs:
            if key in out:
                raise InputError(f"{path}: key {_shown(key)} appears twice in one object (which one holds is "
                                 f"undefined)")
            out[key] = value
        return out
    return hook


def _int(text: str) -> int | float:
    # An integer too long for a float column is read as one (it overflows to inf, refused where
    # it is used) rather than built digit by digit.
    return int(text) if len(text) <= 18 else float(text)


def parse_json(path: Path, data: bytes) -> Any:
    """JSON as asv writes it (NaN and Infinity allowed); InputError naming `path` for invalid
    UTF-8, invalid or too deeply nested JSON, and a key given twice in one object."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys(path), parse_int=_int, parse_constant=float)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                         f"truncated or not an asv results file") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply; not an asv results file") from None


def read_json(path: Path) -> Any:
    """A JSON file, read as `load_bytes` and `parse_json` do."""
    return parse_json(path, load_bytes(path))


def read(path: Path) -> ResultsFile:
    """Parse and validate one results file; any problem raises InputError naming it."""
    return parse(path, load_bytes(path))


def parse(path: Path, data: bytes) -> ResultsFile:
    """Validate the content of one results file (`data`, its bytes)."""
    document = parse_json(path, data)
    where = _Where(path)
    if not isinstance(document, dict):
        raise InputError(f"{path}: expected a JSON object (an asv results file)")
    document = _upgraded(path, document)
    for key in ("commit_hash", "env_name", "params", "result_columns", "results"):
        if key not in document:
            raise where.error(key, "missing (not an asv results file?)")
    params = _mapping(where, "params", document["params"])
    columns = _columns(where, document["result_columns"])
    rows = document["results"]
    if not isinstance(rows, dict):
        raise where.error("results", f"expected an object mapping benchmark names to rows, got {_type(rows)}")
    points, described = [], {}
    for name, row in rows.items():
        _text(where, "results", name, LIMITS["benchmark"])
        described[name], mine = _benchmark(_Where(path, name), columns, row)
        points.extend(mine)
    machine = params.get("machine", path.parent.name)
    return ResultsFile(path=path, machine=_text(where, "params.machine", machine, LIMITS["machine"]),
                       commit=_commit(where, document["commit_hash"]),
                       env=_text(where, "env_name", document["env_name"], LIMITS["env_name"]),
                       python=_text(where, "python", document.get("python", ""), LIMITS["python"], empty=True),
                       requirements=_mapping(where, "requirements", document.get("requirements") or {}),
                       machine_params=params, date=_timestamp(where, "date", document.get("date")),
                       rows=described, points=tuple(points))


def _upgraded(path: Path, document: dict) -> dict:
    """Format 2 as it is; format 1 converted in memory by asv's own `Results.update_to_2`."""
    version = document.get("version")
    if version == SUPPORTED_VERSION:
        return document
    if version != 1:
        raise InputError(f"{path}: asv results format version {_shown(str(version))} is not supported "
                         f"(expected 1 or {SUPPORTED_VERSION})")
    from asv import util
    from asv.results import Results

    try:
        return Results.update_to_2(document)
    except (util.UserError, KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise InputError(f"{path}: an asv format 1 file that asv's converter cannot read ({type(exc).__name__}: "
                         f"{str(exc)[:120]})") from None


def storable(text: str) -> bool:
    """True when a database can store `text` as it is (no NUL, no lone surrogate)."""
    return _UNSTORABLE.search(text) is None


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _text(where: _Where, field: str, value: Any, limit: int, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise where.error(field, f"expected a string, got {_type(value)}")
    if not value and not empty:
        raise where.error(field, "expected a non-empty string")
    if len(value) > limit:
        raise where.error(field, f"{len(value)} characters, more than the {limit} allowed")
    if _CONTROL.search(value) or _UNSTORABLE.search(value):
        raise where.error(field, "contains a control character (NUL, newline, escape...) or a lone surrogate")
    return value


def check_stored(path: Path, field: str, value: Any) -> None:
    """Refuse (InputError naming `path` and `field`) JSON that is stored as it is but could not
    be: a NUL or a lone surrogate in a string, a non-finite number, deep nesting."""
    _plain(_Where(path), field, value)


def _plain(where: _Where, field: str, value: Any, depth: int = 0) -> None:
    if depth > 8:
        raise where.error(field, "nested too deeply")
    if isinstance(value, str) and _UNSTORABLE.search(value):
        raise where.error(field, "contains a NUL character or a lone surrogate (text a database cannot store)")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        _plain(where, f"{field}.{key}", key, depth + 1)
        _plain(where, f"{field}.{key}", inner, depth + 1)
    if isinstance(value, float) and not math.isfinite(value):
        raise where.error(field, f"{value} where a description is expected")


def _mapping(where: _Where, field: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise where.error(field, f"expected an object, got {_type(value)}")
    _plain(where, field, value)
    return value


def _commit(where: _Where, value: Any) -> str:
    if not isinstance(value, str):
        raise where.error("commit_hash", f"expected a string (a commit hash), got {_type(value)}")
    if not git.is_hash(value):
        raise where.error("commit_hash", f"{_shown(value)} is not a commit hash (expected 7-64 hexadecimal digits)")
    return value


def _columns(where: _Where, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise where.error("result_columns", "expected a list of column names")
    if len(set(value)) != len(value):
        raise where.error("result_columns", "a column is named twice")
    for needed in ("result", "params", "version"):
        if needed not in value:
            raise where.error("result_columns", f"{needed!r} is missing")
    return value


def _timestamp(where: _Where, field: str, ms: Any) -> dt.datetime | None:
    if ms is None:
        return None
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= _LATEST_MS:
        raise where.error(field, f"{ms!r} is not a time asv writes (milliseconds since 1970, up to the year 9999)")
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)


def _number(where: _Where, field: str, value: Any, nan: bool = False) -> float | None:
    """None, or a finite number (NaN too, where `nan`: asv's 'skipped')."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.error(field, f"expected a number or null, got {_type(value)}")
    number = float(value)
    if not math.isfinite(number) and not (nan and math.isnan(number)):
        raise where.error(field, f"{number} is not a valid measurement (expected a finite number"
                          + (", NaN or null)" if nan else " or null)"))
    if abs(number) > MAX_MAGNITUDE:
        raise where.error(field, f"{number:g} is not a measurement (beyond ±{MAX_MAGNITUDE:g})")
    return number


def _count(where: _Where, field: str, value: Any) -> int | None:
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value != int(value) or not 1 <= value <= MAX_NUMBER):
        raise where.error(field, f"expected a whole number from 1 to {MAX_NUMBER} or null, got {value!r}")
    return int(value)


def shown_value(text: str) -> str:
    """A parameter value as asv shows it: a string's repr without its quotes, a class by its name."""
    for pattern in _SHOWN_AS:
        match = pattern.match(text)
        if match and match.group(1).strip():
            return match.group(1)
    return text


def _param_lists(where: _Where, value: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list) or not all(isinstance(p, list) for p in value):
        raise where.error("params", f"expected a list of lists of values, got {_type(value)}")
    for i, values in enumerate(value):
        for text in values:
            if not isinstance(text, str):
                raise where.error(f"params[{i}]", f"expected each value's repr (a string), got {_type(text)}")
            if len(text) > MAX_PARAM:
                raise where.error(f"params[{i}]", f"a value of {len(text)} characters, more than {MAX_PARAM}")
            if _UNSTORABLE.search(text):
                raise where.error(f"params[{i}]", "a value contains a NUL character or a lone surrogate")
    return tuple(tuple(values) for values in value)


def _combinations(where: _Where, lists: tuple[tuple[str, ...], ...], results: Any) -> list[tuple[tuple[str, ...], str]]:
    count = math.prod(len(values) for values in lists)
    expected = len(results) if isinstance(results, list) else None
    if expected is not None and count != expected:
        raise where.error("result", f"{expected} value(s) for {count} parameter combination(s)")
    if count > MAX_COMBINATIONS:
        raise where.error("params", f"{count} parameter combinations, more than {MAX_COMBINATIONS}")
    combos = [tuple(shown_value(v) for v in combo) for combo in itertools.product(*lists)] if lists else [()]
    keys = [json.dumps(list(combo)) for combo in combos]
    if len(set(keys)) != len(keys):
        raise where.error("params", "two parameter combinations read the same (a value listed twice, or 1 and '1')")
    if max(map(len, keys), default=0) > MAX_PARAMS_KEY:
        raise where.error("params", f"one combination is longer than {MAX_PARAMS_KEY} characters as JSON")
    return list(zip(combos, keys))


def _benchmark(where: _Where, columns: list[str], row: Any) -> tuple[Row, list[Point]]:
    if not isinstance(row, list):
        raise where.error("row", f"expected a list, got {_type(row)}")
    if len(row) > len(columns):
        raise where.error("row", f"{len(row)} fields for {len(columns)} result_columns")
    # asv drops trailing nulls from a row, never the leading result, params and version
    fields = dict(zip(columns, row))
    for needed in ("result", "params", "version"):
        if needed not in fields:
            raise where.error(needed, f"missing: the row has {len(row)} of {len(columns)} fields")
    version = _text(where, "version", fields["version"], LIMITS["version"])
    lists = _param_lists(where, fields["params"])
    values = fields["result"]
    if values is not None and not isinstance(values, list):
        raise where.error("result", f"expected a list of values or null, got {_type(values)}")
    combos = _combinations(where, lists, values)
    values = values if values is not None else [None] * len(combos)  # asv: null when every combination failed
    samples, numbers = (_per_combination(where, fields, column, len(combos)) for column in ("samples", "stats_number"))
    started = _timestamp(where, "started_at", fields.get("started_at"))
    duration = _number(where, "duration", fields.get("duration"))
    if duration is not None and duration < 0:
        raise where.error("duration", f"{duration} is negative")
    points = [Point(benchmark=where.benchmark, params=combo, key=key,
                    value=_number(where, f"result[{i}]", values[i], nan=True), samples=_samples(where, i, samples[i]),
                    number=_count(where, f"stats_number[{i}]", numbers[i]), version=version, started_at=started,
                    duration=duration)
              for i, (combo, key) in enumerate(combos)]
    return Row(version, lists), points


def _per_combination(where: _Where, fields: dict, column: str, count: int) -> list:
    listed = fields.get(column)
    if listed is None:
        return [None] * count
    if not isinstance(listed, list) or len(listed) != count:
        raise where.error(column, f"expected one entry per parameter combination ({count}) or null")
    return listed


def _samples(where: _Where, i: int, listed: Any) -> tuple[float, ...] | None:
    if listed is None:
        return None
    if not isinstance(listed, list):
        raise where.error(f"samples[{i}]", f"expected a list of numbers, got {_type(listed)}")
    out = tuple(_number(where, f"samples[{i}] raw sample", s) for s in listed)
    if any(s is None for s in out):
        raise where.error(f"samples[{i}]", "a raw sample is null")
    return out  # type: ignore[return-value]  (no None left)


def find(directory: Path) -> list[Path]:
    """Every results file of an asv results directory (`<dir>/<machine>/*.json`) or of one
    machine's directory (`<dir>/*.json`); machine.json and benchmarks.json are not results."""
    found = [*directory.glob("*.json"), *directory.glob("*/*.json")]
    return sorted(p for p in found if p.name not in _SKIP and not p.name.startswith("proofbench-"))


def benchmarks_file(path: Path) -> Path:
    """Where asv keeps the benchmarks' descriptions for the results file at `path`."""
    return path.parent.parent / "benchmarks.json"
