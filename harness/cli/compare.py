"""`proofbench compare A B`: two machines side by side, as a text table, JSON or an HTML page."""
from __future__ import annotations

import argparse
import io
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

from proofbench.cli.common import add_db_option, console

JSON_FORMAT = 1  # version of the JSON document; bumped when its shape changes
FORMATS = ("text", "json", "html")


def add_parser(sub) -> None:
    parser = sub.add_parser("compare", help="compare two machines: each one's speedups side by side, and the "
                            "throughput ratio between them, with 95%% intervals")
    parser.add_argument("machine_a", metavar="MACHINE_A", help="machine name (or NAME@FINGERPRINT)")
    parser.add_argument("machine_b", metavar="MACHINE_B", help="machine name (or NAME@FINGERPRINT)")
    parser.add_argument("--commit", metavar="REV", help="commit to compare at (hash prefix or git revision; "
                        "default: each machine's latest)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or html")
    parser.add_argument("--out", type=Path, help="write to this file instead of standard output")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.analysis.hardware import compare
    from proofbench.cli.common import engine
    from proofbench.pipeline.runner import ROOT

    with Session(engine(args)) as session:
        comparison = compare(session, args.machine_a, args.machine_b, args.commit, repo=ROOT)
        output = html(comparison, args.out) if args.format == "html" else \
            {"text": text, "json": as_json_text}[args.format](comparison)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(output)
        console.print(f"wrote {args.out}")
    else:
        sys.stdout.write(output)
    return 0


def _number(x: float | None) -> float | None:
    # JSON has no NaN: an undefined figure is null
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _speedup(s) -> dict | None:
    if s is None:
        return None
    return {"estimate": _number(s.estimate), "low": _number(s.low), "high": _number(s.high),
            "p_value": _number(s.p_value), "n_reference": s.n_baseline, "n_compared": s.n_variant,
            "significant": s.significant, "word": s.word}


def _variant(v) -> dict | None:
    if v is None:
        return None
    return {"status": v.status, "reason": v.reason, "samples": len(v.samples),
            "median_s": _number(v.time.median) if v.time else None, "iqr_s": _number(v.time.iqr) if v.time else None,
            "noisy": v.noisy, "items": _number(v.items), "items_per_second": _number(v.items_per_second),
            "speedup": _speedup(v.speedup), "threads": v.threads, "busy": v.busy}


def as_json(comparison) -> dict:
    """The comparison as a JSON-safe dict: stable key order, NaN as null, a format version.

    `throughput_ratio` is items/s on A over items/s on B; its `word` reads "faster" when A is
    significantly faster. Each side's `speedup` is its variant over its baseline on that machine.
    """
    return {
        "format": JSON_FORMAT, "a": asdict(comparison.a), "b": asdict(comparison.b),
        "same_commit": comparison.same_commit,
        "subjects": [{"subject": s.subject, "area": s.area, "item": s.item, "size": s.size,
                      "variants": [{"variant": v.variant, "a": _variant(v.a), "b": _variant(v.b),
                                    "throughput_ratio": _speedup(v.ratio), "note": v.note} for v in s.variants]}
                     for s in comparison.subjects],
    }


def as_json_text(comparison) -> str:
    """`as_json` serialised with sorted keys, so equal comparisons give equal bytes."""
    return json.dumps(as_json(comparison), indent=2, sort_keys=True, allow_nan=False) + "\n"


def _side_line(label: str, side) -> str:
    gpu = side.gpu if side.gpu != "none" or not side.gpu_note else f"none ({side.gpu_note})"
    return (f"{label}: {side.name} (fingerprint {side.fingerprint}) at commit {side.commit[:10]}; CPU {side.cpu}"
            f"{f', {side.logical_cores} logical cores' if side.logical_cores else ''}; GPU {gpu}; "
            f"torch {side.torch or 'unknown'}")


def text(comparison) -> str:
    """The comparison as a plain-text table (no colour codes)."""
    from rich.console import Console
    from rich.table import Table

    from proofbench.reports import formatting as fmt

    a, b = comparison.a.name, comparison.b.name
    table = Table(title=f"proofbench — {a} (A) against {b} (B)")
    for column in ("subject", "size", "variant", f"speedup on {a}", f"speedup on {b}", f"{a} items/s",
                   f"{b} items/s", "A/B items/s [95% CI]"):
        table.add_column(column)
    for s in comparison.subjects:
        for v in s.variants:
            table.add_row(s.subject, s.size, v.variant, _cell(v.a), _cell(v.b),
                          fmt.rate(v.a.items_per_second) if v.a else "—",
                          fmt.rate(v.b.items_per_second) if v.b else "—", _ratio_cell(v))
    width = console.width if sys.stdout.isatty() else 200
    out = Console(file=io.StringIO(), width=width, color_system=None, record=True)
    out.print(_side_line("A", comparison.a))
    out.print(_side_line("B", comparison.b))
    if not comparison.same_commit:
        out.print("note: the machines are compared at different commits (each one's latest)")
    out.print(table)
    return out.export_text()


def _cell(v) -> str:
    from proofbench.reports import formatting as fmt

    if v is None:
        return "not measured"
    if v.status != "ok":
        return v.status
    if v.speedup is None:
        return "reference" if v.variant == "baseline" else "—"
    return f"{fmt.factor(v.speedup.estimate)} {fmt.interval(v.speedup.low, v.speedup.high)}".strip()


def _ratio_cell(v) -> str:
    from proofbench.reports import formatting as fmt

    if v.ratio is None:
        return v.note
    figure = f"{fmt.factor(v.ratio.estimate)} {fmt.interval(v.ratio.low, v.ratio.high)}".strip()
    word = {"faster": "A faster", "slower": "A slower"}.get(v.ratio.word, v.ratio.word)
    return f"{figure} ({word})"


def html(comparison, out: Path | None = None) -> str:
    """The comparison as an HTML page (reports/templates/compare.html, autoescaped).

    Its navigation and stylesheet point at the rendered site (reports/site), relative to `out`.
    """
    import datetime as dt
    import os

    from proofbench.reports.render import SITE_DIR, environment

    relative = os.path.relpath(SITE_DIR, out.resolve().parent) if out is not None else "."
    return environment().get_template("compare.html").render(
        c=comparison, root="" if relative == "." else relative + "/", page="compare",
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
