"""Why, as the report and the terminal show it: top operators side by side, share of peak, energy.

A view is one subject at one size on one machine: every profiled variant with its trace
links, its `Limit` (achieved FLOP/s or bytes/s against the machine's calibration at the
results' thread count) and its `Energy`, and one operator table with the baseline's column
first, so a saving reads operator by operator. The machines page gets each machine's
calibrations as rows beside its hardware profile.
"""
from __future__ import annotations

import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from proofbench.analysis.comparison import SubjectFigures
from proofbench.analysis.limits import Energy, Limit, energy, limit
from proofbench.db.profiles import CalibrationRow, VariantProfileRow
from proofbench.errors import InputError
from proofbench.machine.calibrate import DTYPES, Calibration
from proofbench.measure.noise import BUSY_CORES
from proofbench.reports import formatting as fmt
from proofbench.reports.output import SiteWriter, slug

TOP_OPERATORS = 10  # rows of the side-by-side table: the union of each variant's top ones
PROFILES_DIR = "profiles"
TRACE_SUFFIX = ".trace.json"  # what `proofbench profile` names its traces


@dataclass(frozen=True)
class OperatorLine:
    """One operator or function: self seconds per call in each variant (None: not among its top)."""

    name: str
    seconds: tuple[float | None, ...]


@dataclass(frozen=True)
class VariantWhy:
    """One variant's profile as shown: its traces (kind, link), its limit and its energy."""

    row: VariantProfileRow
    traces: tuple[tuple[str, str], ...]
    missing: tuple[str, ...]  # trace files that were not found where the profile wrote them
    limit: Limit | None
    energy: Energy


@dataclass(frozen=True)
class ProfileView:
    """One subject at one size on one machine: variants, baseline first, and their operator table."""

    subject: str
    machine_id: int
    size: str
    variants: tuple[VariantWhy, ...]
    columns: tuple[str, ...]  # the variants of the operator table (those profiled without failing)
    operators: tuple[OperatorLine, ...]
    kinds: tuple[str, ...]  # which profilers explain the calls: torch, python


def operator_lines(variants: list[list[dict]], top: int = TOP_OPERATORS) -> tuple[OperatorLine, ...]:
    """The union of each variant's `top` rows, by the first variant's (the baseline's) self time."""
    seconds = [{r["name"]: r["self_seconds"] for r in rows} for rows in variants]
    names: list[str] = []
    for rows in variants:
        names += [r["name"] for r in rows[:top] if r["name"] not in names]
    lines = [OperatorLine(n, tuple(s.get(n) for s in seconds)) for n in names]
    return tuple(sorted(lines, key=lambda line: [-(x or 0.0) for x in line.seconds]))


def _calibration(rows: list[CalibrationRow], machine_id: int, device: str, threads: int) -> CalibrationRow | None:
    return next((c for c in rows if (c.machine_id, c.device, c.threads) == (machine_id, device, threads)), None)


def _limit(row: VariantProfileRow, calibration: CalibrationRow | None, figures: SubjectFigures | None) -> Limit | None:
    if row.status != "ok":
        return None
    measured = figures.variant(row.variant) if figures is not None else None
    median = measured.time.median if measured is not None and measured.time is not None else None
    document = _document(calibration) if calibration is not None else None
    return limit(row.variant, row.bound, row.flops or {}, row.bytes_moved, document, median, row.call_seconds)


def link_trace(writer: SiteWriter | None, row: VariantProfileRow, path: str) -> str | None:
    """The trace's path relative to the site root, copied there when it lies elsewhere; None if absent.

    The path comes from the database, which other machines write: only a file named like a trace
    (`*.trace.json`) is linked or copied, so no row can publish another file of this machine."""
    source = Path(path)
    if not source.name.endswith(TRACE_SUFFIX) or not source.is_file():
        return None
    if writer is None:
        return str(source)
    if source.resolve().is_relative_to(writer.root):
        return str(source.resolve().relative_to(writer.root))
    relative = f"{PROFILES_DIR}/{slug(row.subject)}/{slug(row.size)}/{slug(source.name)}"
    target = writer.path(relative)
    if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return relative


def _variant(row: VariantProfileRow, calibrations: list[CalibrationRow], figures: SubjectFigures | None,
             writer: SiteWriter | None) -> VariantWhy:
    measured = figures.variant(row.variant) if figures is not None else None
    threads = measured.threads if measured is not None and measured.threads else row.threads
    calibration = _calibration(calibrations, row.machine_id, row.device, threads)
    links = {kind: link_trace(writer, row, path) for kind, path in (row.traces or {}).items()}
    return VariantWhy(row, tuple((k, v) for k, v in links.items() if v), tuple(k for k, v in links.items() if not v),
                      _limit(row, calibration, figures),
                      energy(row.energy_joules, row.energy_calls, row.items, row.energy_source, row.energy_caveat,
                             row.energy_reason))


def _order(rows: list[VariantProfileRow], found: SubjectFigures | None) -> list[VariantProfileRow]:
    # One row per variant: profiled at the results' thread count where there is one, the newest.
    threads = next((v.threads for v in found.variants if v.threads), None) if found is not None else None
    newest: dict[str, VariantProfileRow] = {}
    for row in sorted(rows, key=lambda r: (r.threads == threads, r.id or 0)):
        newest[row.variant] = row
    rank = {v.variant: i for i, v in enumerate(found.variants)} if found is not None else {}
    return sorted(newest.values(), key=lambda r: (r.variant != "baseline", rank.get(r.variant, len(rank)), r.variant))


def views(profiles: list[VariantProfileRow], calibrations: list[CalibrationRow],
          figures: Callable[[int, str, str], SubjectFigures | None],
          writer: SiteWriter | None = None) -> dict[tuple[str, int, str], ProfileView]:
    """Every profiled (subject, machine, size), keyed so; `figures(machine_id, subject, size)` gives
    the newest results there (or None)."""
    grouped: dict[tuple[str, int, str], list[VariantProfileRow]] = defaultdict(list)
    for row in profiles:
        grouped[(row.subject, row.machine_id, row.size)].append(row)
    out = {}
    for key, rows in grouped.items():
        found = figures(key[1], key[0], key[2])
        variants = [_variant(r, calibrations, found, writer) for r in _order(rows, found)]
        ok = [v.row for v in variants if v.row.status == "ok"]
        out[key] = ProfileView(key[0], key[1], key[2], tuple(variants), tuple(r.variant for r in ok),
                               operator_lines([r.operators for r in ok]),
                               tuple(sorted({r.kind for r in ok if r.kind})))
    return out


def _peak_text(calibration: Calibration, dtype: str) -> str:
    peak = calibration.peak(dtype)
    if peak is None:
        return calibration.unavailable.get(dtype, "not measured")
    unit = "OP/s" if dtype == "int8" else "FLOP/s"
    return (f"{fmt.si(peak.rate, unit)} (n={peak.size}, median {fmt.si(peak.median, unit)}, "
            f"slowest {fmt.percent(peak.spread)} below best, {peak.repeats} repeat{'s' if peak.repeats != 1 else ''})")


def _bandwidth_text(calibration: Calibration) -> str:
    peak = calibration.bandwidth
    if peak is None:
        return calibration.unavailable.get("copy", "not measured")
    return (f"{fmt.byte_size(peak.rate)}/s (copy of {fmt.byte_size(peak.size)}, read + written; "
            f"slowest {fmt.percent(peak.spread)} below best, {peak.repeats} repeat{'s' if peak.repeats != 1 else ''})")


def calibration_rows(machine_ids: list[int], rows: list[CalibrationRow]) -> list[tuple[str, list[str]]]:
    """Rows of the machines page's calibration table: a label and one text per machine."""
    settings = sorted({(r.device, r.threads) for r in rows})
    out = []
    for device, threads in settings:
        found = {r.machine_id: r for r in rows if (r.device, r.threads) == (device, threads)}
        documents = {m: _document(r) for m, r in found.items()}
        where = f"{device}, {threads} thread{'s' if threads != 1 else ''}"
        out.append((f"calibrated ({where})", [_when(found[m], documents[m]) if m in found else "—"
                                             for m in machine_ids]))
        for dtype in DTYPES:
            out.append((f"{dtype} matmul peak ({where})", [_peak_text(documents[m], dtype) if documents.get(m)
                                                           else "—" for m in machine_ids]))
        out.append((f"memory bandwidth ({where})", [_bandwidth_text(documents[m]) if documents.get(m) else "—"
                                                    for m in machine_ids]))
    return out


def _when(row: CalibrationRow, calibration: Calibration | None) -> str:
    load = calibration.other_load_cores if calibration is not None else None
    if load is None:
        return fmt.when(row.measured_at)
    busy = "; the machine was busy, so these peaks may read low" if load > BUSY_CORES else ""
    return f"{fmt.when(row.measured_at)} · other processes used {load:.2f} cores meanwhile{busy}"


def _document(row: CalibrationRow) -> Calibration | None:
    try:
        return Calibration.from_dict(row.document)
    except InputError:
        return None  # a document of another format version: shown as missing, not as a crash


def loose(found: dict[tuple[str, int, str], ProfileView], pages: list) -> dict[str, list[ProfileView]]:
    """Views no group of a subject page shows (profiled at a size or on a machine without results), by subject."""
    shown = {(page.subject, g.column.machine.id, g.size) for page in pages for g in page.groups}
    out: dict[str, list[ProfileView]] = defaultdict(list)
    for key, view in sorted(found.items()):
        if key not in shown:
            out[key[0]].append(view)
    return dict(out)


def limit_text(limit: Limit | None) -> str:
    """A variant's distance to the limit in words: '31% of this machine's measured bfloat16 peak'."""
    if limit is None:
        return "—"
    if limit.share is None:
        return limit.reason
    what = {"memory": "memory bandwidth", "mixed": "peaks (mixed dtypes)"}.get(limit.dtype, f"{limit.dtype} peak")
    if limit.over_peak:
        return (f"{fmt.percent(limit.share)} of the measured {what}: above 100% is a measurement problem (a peak "
                "measured under load, or work counted that ran elsewhere), not a result")
    return f"{fmt.percent(limit.share)} of this machine's measured {what}"


def terminal_tables(view: ProfileView) -> list:
    """The operator table (baseline beside each variant), the per-variant table and notes, for the console."""
    from rich.table import Table

    operators = Table(title=fmt.cell(f"{view.subject} ({view.size}): self time per call under the profiler"))
    operators.add_column("operator / function", overflow="fold")
    for name in view.columns:
        operators.add_column(fmt.cell(name), justify="right")
    for line in view.operators:
        operators.add_row(fmt.cell(line.name), *[fmt.seconds(x) if x is not None else "—" for x in line.seconds])
    variants = Table(title="work, distance to the limit, energy")
    for column in ("variant", "work per call", "achieved", "distance to the limit", "energy per item", "items/kWh"):
        variants.add_column(column, overflow="fold")
    for v in view.variants:
        variants.add_row(*map(fmt.cell, _terminal_row(v)))
    return [operators, variants, *map(fmt.cell, _terminal_notes(view))]


def _terminal_row(v: VariantWhy) -> list[str]:
    row = v.row
    if row.status != "ok":
        return [row.variant, row.status, "", row.reason, "", ""]
    data = row.bound == "data"
    work = f"{fmt.byte_size(row.bytes_moved)} moved" if data else fmt.si(sum((row.flops or {}).values()), "FLOP")
    rate = "—" if v.limit is None or v.limit.rate is None else (
        f"{fmt.byte_size(v.limit.rate)}/s" if data else fmt.si(v.limit.rate, "FLOP/s"))
    measured = v.energy.joules_per_item is not None
    return [row.variant, work, rate, limit_text(v.limit), fmt.joules(v.energy.joules_per_item) if measured
            else "not measurable here", fmt.si(v.energy.items_per_kwh, "") if measured else "—"]


def _terminal_notes(view: ProfileView) -> list[str]:
    ok = [v for v in view.variants if v.row.status == "ok"]
    notes = sorted({f"energy not measurable here: {v.energy.reason}" for v in ok if v.energy.joules_per_item is None}
                   | {f"energy: {v.energy.caveat}" for v in ok if v.energy.caveat})
    notes += [f"{v.row.variant}: {v.row.flops_note}" for v in ok if v.row.flops_note and v.row.bound == "compute"]
    return notes + [f"{v.row.variant} {kind} trace: {path}" for v in ok for kind, path in v.traces]


def calibration_lines(calibration: Calibration) -> list[str]:
    """A calibration as lines of text, for the console."""
    where = f"{calibration.device}, {calibration.threads} thread(s), torch {calibration.torch_version}"
    lines = [f"{dtype} matmul peak ({where}): {_peak_text(calibration, dtype)}" for dtype in DTYPES]
    lines.append(f"memory bandwidth ({where}): {_bandwidth_text(calibration)}")
    if calibration.other_load_cores is not None:
        lines.append(f"other processes used {calibration.other_load_cores:.2f} cores meanwhile"
                     + (" (busy: the peaks may read low)" if calibration.other_load_cores > BUSY_CORES else ""))
    return lines
