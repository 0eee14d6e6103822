"""Two machines side by side (`proofbench compare`): a plain-text table, the JSON document, an HTML page."""
from __future__ import annotations

import datetime as dt
import io
import json
import math
import os
from dataclasses import asdict
from pathlib import Path

from markupsafe import Markup

from proofbench.analysis.across_runs import ASSUMED_BETWEEN_RUNS, MIN_SITTINGS, NO_DIFFERENCE
from proofbench.reports import formatting as fmt

JSON_FORMAT = 3  # version of the JSON document; bumped when its shape changes (2: plain asv benchmarks,
# speedups from paired rounds; 3: the A/B ratio's interval holds how much each side's runs move)


def _number(x: float | None) -> float | None:
    # JSON has no NaN: an undefined figure is null
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _ratio(r) -> dict | None:
    # the throughput ratio between machines: two runs' samples, how much each side's runs move held
    # by its interval (analysis.across_runs.AcrossRuns); `samples_low/high`: the samples' own interval
    if r is None:
        return None
    return {"estimate": _number(r.estimate), "low": _number(r.low), "high": _number(r.high),
            "samples_low": _number(r.within.low), "samples_high": _number(r.within.high),
            "p_value": _number(r.within.p_value), "n_reference": r.within.n_baseline,
            "n_compared": r.within.n_variant, "word": str(r.difference), "reason": r.why,
            "run_to_run": {side: {"fraction": _number(m.fraction), "sittings": m.sittings, "assumed": m.assumed}
                           for side, m in (("a", r.a), ("b", r.b))}}


def _speedup(s) -> dict | None:
    # a variant over its baseline on one machine: paired rounds (stats.Paired)
    if s is None:
        return None
    return {"estimate": _number(s.estimate), "low": _number(s.low), "high": _number(s.high),
            "p_value": _number(s.p_value), "rounds": s.rounds, "rounds_kept": s.kept,
            "significant": s.significant, "word": str(s.difference), "reason": str(s.why)}


def _variant(v) -> dict | None:
    if v is None:
        return None
    return {"status": v.status, "reason": v.reason, "samples": len(v.samples),
            "median_s": _number(v.time.median) if v.time else None, "iqr_s": _number(v.time.iqr) if v.time else None,
            "noisy": v.noisy, "items": _number(v.items), "items_per_second": _number(v.items_per_second),
            "speedup": _speedup(v.speedup), "threads": v.threads, "busy": v.busy, "gpu": _gpu(v.gpu)}


def _gpu(conditions) -> dict | None:
    # a CUDA run watched through NVML: what held its clocks down, and who else used the GPU
    if conditions is None:
        return None
    return {"throttled": conditions.throttled, "throttle_reasons": list(conditions.throttle_reasons),
            "other_processes": conditions.other_processes, "other_pids": list(conditions.other_pids)}


def as_json(comparison) -> dict:
    """The comparison as a JSON-safe dict: stable key order, NaN as null, a format version.

    `throughput_ratio` is items/s on A over items/s on B; its interval holds how much each side's
    runs move (`run_to_run`: a sitting's standard deviation, measured over `sittings` sittings of
    that benchmark there, or `assumed`), and its
    `word` reads "faster" when that whole interval lies above 1 (`reason`: why no word). Each
    side's `speedup` is its variant over its baseline on that machine. `same_hardware`: two
    machine names with one hardware fingerprint. `benchmarks` are the plain asv benchmarks
    measured on both at `benchmarks_commit`: asv's value on each machine and `ratio`, A's over B's.
    """
    return {
        "format": JSON_FORMAT, "a": asdict(comparison.a), "b": asdict(comparison.b),
        "same_commit": comparison.same_commit, "same_hardware": comparison.same_hardware,
        "subjects": [{"subject": s.subject, "area": s.area, "item": s.item, "size": s.size,
                      "variants": [{"variant": v.variant, "a": _variant(v.a), "b": _variant(v.b),
                                    "throughput_ratio": _ratio(v.ratio), "note": v.note} for v in s.variants]}
                     for s in comparison.subjects],
        "benchmarks_commit": comparison.plain_commit or None,
        "benchmarks": [{"benchmark": p.benchmark, "params": p.params, "unit": p.unit, "a": _number(p.a),
                        "b": _number(p.b), "ratio": _number(p.ratio), "note": p.note} for p in comparison.plain],
    }


def as_json_text(comparison) -> str:
    """`as_json` serialised with sorted keys, so equal comparisons give equal bytes."""
    return json.dumps(as_json(comparison), indent=2, sort_keys=True, allow_nan=False) + "\n"


def _name(side) -> str:
    # one machine's devices side by side: the device tells the sides apart
    return f"{side.name} [{side.device}]" if side.device else side.name


def _side_line(label: str, side) -> str:
    gpu = side.gpu if side.gpu != "none" or not side.gpu_note else f"none ({side.gpu_note})"
    profiles = f" ({side.device} profiles)" if side.device else ""
    return (f"{label}: {side.name}{profiles} (fingerprint {side.fingerprint}) at commit {side.commit[:10]}; "
            f"CPU {side.cpu}"
            f"{f', {side.logical_cores} logical cores' if side.logical_cores else ''}; GPU {gpu}; "
            f"torch {side.torch or 'unknown'}")


def text(comparison) -> str:
    """The comparison as a plain-text table (no colour codes)."""
    from rich.console import Console
    from rich.table import Table

    a, b = _name(comparison.a), _name(comparison.b)
    table = Table(title=fmt.cell(f"proofbench — {a} (A) against {b} (B)"))
    for column in ("subject", "size", "variant", f"speedup on {a}", f"speedup on {b}", f"{a} items/s",
                   f"{b} items/s", "A/B items/s [95% CI]"):
        table.add_column(fmt.cell(column))
    for s in comparison.subjects:
        for v in s.variants:
            table.add_row(*map(fmt.cell, (s.subject, s.size, v.variant, _cell(v.a), _cell(v.b),
                                          fmt.rate(v.a.items_per_second) if v.a else "—",
                                          fmt.rate(v.b.items_per_second) if v.b else "—", _ratio_cell(v))))
    width = 200
    out = Console(file=io.StringIO(), width=width, color_system=None, record=True)
    out.print(fmt.cell(_side_line("A", comparison.a)))
    out.print(fmt.cell(_side_line("B", comparison.b)))
    if not comparison.same_commit:
        sides = "devices" if comparison.a.device else "machines"
        out.print(f"note: the {sides} are compared at different commits (each one's latest)")
    if comparison.same_hardware:
        out.print("note: A and B have the same hardware fingerprint: a difference between them is their runs', "
                  "not their hardware's")
    if comparison.subjects:
        out.print(table)
        if _assumed(comparison):
            out.print(ASSUMED_NOTE)
    if comparison.plain:
        out.print(_plain_table(comparison))
    return out.export_text()


def _plain_table(comparison):
    from rich.table import Table

    a, b = comparison.a.name, comparison.b.name
    table = Table(title=fmt.cell(f"asv benchmarks at commit {comparison.plain_commit[:10]} (A/B below 1: lower on A; "
                                 f"one value each, no interval)"))
    for column in ("benchmark", "parameters", a, b, "A/B"):
        table.add_column(fmt.cell(column))
    for p in comparison.plain:
        params = ", ".join(f"{k}={v}" for k, v in p.params.items())
        table.add_row(*map(fmt.cell, (p.benchmark, params, fmt.measured(p.a, p.unit), fmt.measured(p.b, p.unit),
                                      f"{p.ratio:.3g}" if p.ratio is not None else p.note)))
    return table


def _cell(v) -> str:
    if v is None:
        return "not measured"
    if v.status != "ok":
        return v.status
    caveat = fmt.gpu_words(v.gpu)
    if v.speedup is None:
        shown = "reference" if v.variant == "baseline" else "—"
    else:
        shown = f"{fmt.factor(v.speedup.estimate)} {fmt.interval(v.speedup.low, v.speedup.high)}".strip()
    return f"{shown}\n{caveat}" if caveat else shown


def _ratio_cell(v) -> str:
    if v.ratio is None:
        return v.note
    figure = f"{fmt.factor(v.ratio.estimate)} {fmt.interval(v.ratio.low, v.ratio.high)}".strip()
    return f"{figure} ({ratio_word(v.ratio)})"


def ratio_word(ratio) -> str:
    """The A/B ratio's word, with why where it has none, and `*` where how much a side's runs
    move was assumed (`ASSUMED_NOTE`): 'A faster', 'inconclusive: too few samples *'."""
    word = {"faster": "A faster", "slower": "A slower"}.get(ratio.difference, str(ratio.difference))
    said = f"{word}: {ratio.why}" if ratio.why else word
    return f"{said} *" if ratio.a.assumed or ratio.b.assumed else said


def _assumed(comparison) -> bool:
    return any(v.ratio is not None and (v.ratio.a.assumed or v.ratio.b.assumed)
               for s in comparison.subjects for v in s.variants)


ASSUMED_NOTE = (f"* how much a run moves was assumed (a sitting's standard deviation of {ASSUMED_BETWEEN_RUNS:.0%}) "
                f"on a side with fewer than {MIN_SITTINGS} sittings of that benchmark (its history measures it, "
                f"runs an hour or more apart): two runs of the same code can differ by tens of percent, which a "
                f"run's own samples do not show")


def html(comparison, site: Path | None = None, out: Path | None = None) -> str:
    """The comparison as an HTML page (templates/compare.html, autoescaped). Written (`out`) beside a
    rendered `site`, its navigation and stylesheet point at the site, relative to the page; else it
    is a page on its own that works where it is written: the stylesheet inlined, no navigation."""
    from proofbench.reports.render import STATIC_DIR, environment

    root = _site_root(site, out)
    # inlined as it is: a <style> element's text is never unescaped, and the file is ours
    own = {} if root is not None else {"standalone": True, "stylesheet": Markup((STATIC_DIR / "site.css").read_text())}
    return environment().get_template("compare.html").render(
        c=comparison, root=root or "", page="compare", ratio_word=ratio_word, sittings=MIN_SITTINGS,
        no_difference=NO_DIFFERENCE,
        assumed_note=ASSUMED_NOTE if _assumed(comparison) else "", **own,
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def _site_root(site: Path | None, out: Path | None) -> str | None:
    # the rendered site's folder as the page at `out` links to it ("" beside its index.html); None
    # without a rendered site (outside a project, or before `proofbench report`) or a file to link from
    if site is None or out is None or not (site / "index.html").is_file():
        return None
    relative = os.path.relpath(site.resolve(), out.resolve().parent)
    return "" if relative == "." else relative + "/"
