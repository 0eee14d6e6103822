"""The suite's labels: what each generated benchmark means, as data beside the generated modules.

`proofbench generate` writes `<suite>/proofbench.json` (generated, checked in, checked for
staleness like the modules; asv reads only `.py` files there). For every benchmark the
generated modules define it says which subject, area, item and metric it measures, the
metric's unit and direction, the parameters' names (variant, size), the subject's variants,
equivalence and rates, and the workload's version. Ingest reads it instead of importing the
subjects, so labelling a row needs the data, not the code (nor torch).

A benchmark without a label is a plain asv benchmark, labelled from what asv says of it in
its results directory's `benchmarks.json` (type, unit, parameter names), else from its name
(asv's prefixes: time_, timeraw_, mem_, peakmem_, track_), its parameters then `p1..pn`: a
fallback that a later ingest replaces once benchmarks.json names them (`relabelled`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proofbench.errors import InputError

if TYPE_CHECKING:
    from proofbench.pipeline.generate import BenchmarkInfo

FILE = "proofbench.json"
FORMAT = "proofbench-labels"
VERSION = 1
PLAIN = "plain"
ASV_UNITS = {"time": "seconds", "memory": "bytes", "peakmemory": "bytes", "track": "unit"}  # asv's types
_PREFIXES = (("timeraw_", "time"), ("time_", "time"), ("peakmem_", "peakmemory"), ("mem_", "memory"),
             ("track_", "track"))
_SUBJECT_FIELDS = {"area": str, "item": str, "version": str, "details": dict}
_BENCHMARK_FIELDS = {"subject": str, "metric": str, "unit": str, "higher_is_better": bool, "param_names": list}
_LIMITS = {"subject": 200, "area": 50, "item": 50, "metric": 100, "unit": 100, "version": 200}


def asv_type(name: str) -> str:
    """asv's type of a benchmark, from its method's name: time, peakmemory, memory or track."""
    return next((k for p, k in _PREFIXES if name.rpartition(".")[2].startswith(p)), "track")


@dataclass(frozen=True)
class Label:
    """The meaning of one benchmark: a subject's metric (`kind` "subject"), or a plain asv
    benchmark (`kind` "plain": no subject, area or item; `metric` is asv's type)."""

    subject: str
    area: str
    item: str
    metric: str
    unit: str
    higher_is_better: bool
    version: str
    param_names: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    kind: str = "subject"


def of(info: BenchmarkInfo) -> Label:
    """The label of one benchmark of the generated suite."""
    subject = info.subject
    details = {"description": subject.description,
               "variants": {v.name: {"description": v.description, "requires": list(v.requires),
                                     **({"parts": list(v.parts)} if subject.parts else {})}
                            for v in subject.variants},
               **({"parts": [{**asdict(p), "requires": list(p.requires)} for p in subject.parts]}
                  if subject.parts else {}),
               "equivalence": {"metric": subject.equivalence.metric.name,
                               "tolerance": subject.equivalence.tolerance,
                               "higher_is_better": subject.equivalence.metric.higher_is_better,
                               "description": subject.equivalence.description},
               "rates": [m.metric.name for m in subject.measures if m.rate]}
    return Label(subject=subject.key, area=subject.area, item=subject.item, metric=info.metric.name,
                 unit=info.metric.unit, higher_is_better=info.metric.higher_is_better, version=info.version,
                 param_names=["variant", "size"], details=details)


def render(labels: dict[str, Label]) -> str:
    """The labels file's text: each subject once, then each benchmark naming its subject and
    metric; sorted, so the same suite always gives the same bytes."""
    from proofbench.pipeline.generate import MARK

    subjects = {label.subject: {"area": label.area, "item": label.item, "version": label.version,
                                "details": label.details} for label in labels.values()}
    benchmarks = {name: {"subject": label.subject, "metric": label.metric, "unit": label.unit,
                         "higher_is_better": label.higher_is_better, "param_names": label.param_names}
                  for name, label in labels.items()}
    document = {"format": FORMAT, "version": VERSION,
                "note": f"{MARK} from the project's subjects: what each benchmark of this suite means",
                "subjects": subjects, "benchmarks": benchmarks}
    return json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n"


def read(directory: Path | None) -> dict[str, Label]:
    """The labels of the suite in `directory` (none where it has no labels file)."""
    from proofbench.pipeline.results_file import check_stored, read_json

    path = directory / FILE if directory is not None else None
    if path is None or not (path.exists() or path.is_symlink()):
        return {}
    document = read_json(path)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InputError(f"{path}: not a proofbench labels file (run `proofbench generate`)")
    if document.get("version") != VERSION:
        raise InputError(f"{path}: labels format version {document.get('version')!r} is not supported (expected "
                         f"{VERSION}; run `proofbench generate`)")
    subjects = {key: _checked(path, f"subject {key!r}", entry, _SUBJECT_FIELDS)
                for key, entry in _table(path, document, "subjects").items()}
    out = {}
    for name, entry in _table(path, document, "benchmarks").items():
        entry = _checked(path, f"benchmark {name!r}", entry, _BENCHMARK_FIELDS)
        subject = subjects.get(entry["subject"])
        if subject is None or not all(isinstance(n, str) and n for n in entry["param_names"]):
            raise InputError(f"{path}: benchmark {name!r}: " + ("param_names: expected a list of names" if subject
                             else f"subject {entry['subject']!r} is not in 'subjects'"))
        out[name] = Label(**subject, **entry)
    check_stored(path, "labels", document)
    return out


def _table(path: Path, document: dict, key: str) -> dict:
    table = document.get(key)
    if not isinstance(table, dict):
        raise InputError(f"{path}: {key!r} must be an object")
    return table


def _checked(path: Path, where: str, entry: Any, fields: dict[str, type]) -> dict:
    if not isinstance(entry, dict):
        raise InputError(f"{path}: {where}: expected an object")
    unknown = sorted(set(entry) - set(fields))
    if unknown:
        raise InputError(f"{path}: {where}: unknown key {unknown[0]!r}")
    for key, kind in fields.items():
        value = entry.get(key)
        if not isinstance(value, kind) or (key in _LIMITS and len(value) > _LIMITS[key]):
            raise InputError(f"{path}: {where}: {key}: expected a {kind.__name__}"
                             + (f" of at most {_LIMITS[key]} characters" if key in _LIMITS else ""))
    return entry


@dataclass(frozen=True)
class AsvEntry:
    """What asv's benchmarks.json says of one benchmark: its type, unit, version, parameters."""

    type: str
    unit: str
    version: str
    param_names: tuple[str, ...]
    params: tuple[tuple[str, ...], ...]


def read_asv(path: Path) -> tuple[dict[str, AsvEntry], list[str]]:
    """The entries of an asv benchmarks.json and a warning per one left out (naming file,
    benchmark and field); a file that is missing or cannot be read, none and a warning."""
    from proofbench.pipeline.results_file import read_json

    if not (path.exists() or path.is_symlink()):
        return {}, [f"{path}: not found (asv writes it beside the machines' results directories); "
                    f"its results' benchmarks are read from their names, parameters named p1..pn"]
    try:
        document = read_json(path)
    except InputError as exc:
        return {}, [f"{exc}; its benchmarks are read as plain ones named p1..pn"]
    if not isinstance(document, dict):
        return {}, [f"{path}: expected a JSON object; its benchmarks are read as plain ones named p1..pn"]
    entries, warnings = {}, []
    for name, entry in document.items():
        if name == "version":
            continue
        try:
            entries[name] = _asv_entry(entry)
        except ValueError as exc:
            warnings.append(f"{path}: benchmark {name[:200]!r}: {exc}; left out (parameters named p1..pn)")
    return entries, warnings


def _asv_entry(entry: Any) -> AsvEntry:
    from proofbench.pipeline.results_file import storable

    if not isinstance(entry, dict):
        raise ValueError("expected an object")
    kind, unit, version = entry.get("type"), entry.get("unit", ""), entry.get("version", "")
    names, params = entry.get("param_names", []), entry.get("params", [])
    if kind not in ASV_UNITS:
        raise ValueError(f"type: expected one of {', '.join(ASV_UNITS)}")
    for key, value in (("unit", unit), ("version", version)):
        if not isinstance(value, str) or len(value) > _LIMITS[key] or not storable(value):
            raise ValueError(f"{key}: expected a string of at most {_LIMITS[key]} characters")
    if not isinstance(names, list) or not all(isinstance(n, str) and 0 < len(n) <= 100 and storable(n) for n in names):
        raise ValueError("param_names: expected a list of names")
    if (not isinstance(params, list) or len(params) != len(names)
            or not all(isinstance(p, list) and all(isinstance(v, str) for v in p) for p in params)):
        raise ValueError("params: expected one list of value reprs per parameter name")
    return AsvEntry(kind, unit or ASV_UNITS[kind], version, tuple(names), tuple(tuple(p) for p in params))


def plain(name: str, version: str, count: int, entry: AsvEntry | None) -> Label:
    """The label of a plain asv benchmark with `count` parameters, from its benchmarks.json
    entry where that has as many parameters, else from its name."""
    kind = entry.type if entry is not None else asv_type(name)
    names = list(entry.param_names) if entry is not None and len(entry.param_names) == count else numbered(count)
    unit = entry.unit if entry is not None else ASV_UNITS[kind]
    return Label(subject="", area="", item="", metric=kind, unit=unit, higher_is_better=False, version=version,
                 param_names=names, details={"type": kind}, kind=PLAIN)


def numbered(count: int) -> list[str]:
    """The names of `count` parameters that benchmarks.json does not name: p1..pn."""
    return [f"p{i + 1}" for i in range(count)]


def relabelled(stored: Label, name: str, entry: AsvEntry | None) -> Label | None:
    """The label benchmarks.json's `entry` gives a plain benchmark stored with the fallback one
    (what `plain` gives without an entry: parameters p1..pn, type and unit from its name), or None:
    `stored` is not that fallback (a label from benchmarks.json is kept), or `entry` does not name
    as many parameters, or describes another asv version of the benchmark (its parameters may
    have moved), or gives the same label (parameters genuinely named p1..pn)."""
    count = len(stored.param_names)
    if stored.kind != PLAIN or not count or entry is None or len(entry.param_names) != count \
            or entry.version != stored.version:
        return None
    label = plain(name, stored.version, count, entry)
    return label if stored == plain(name, stored.version, count, None) != label else None
