"""The pull-request gate's answer: a terminal table, a Markdown comment for the pull request, JSON."""
from __future__ import annotations

import math

from proofbench.analysis.gate import ALPHA, GateReport, SeriesVerdict, Verdict
from proofbench.reports import formatting as fmt

FORMAT = "proofbench-gate"
FORMAT_VERSION = 1


def _series(s: SeriesVerdict) -> str:
    params = ", ".join(s.target.params)
    return f"{s.target.benchmark}({params})" if params else s.target.benchmark


def _change(s: SeriesVerdict) -> str:
    r = s.ratio
    if not math.isfinite(r.estimate):
        return f"{r.rounds} round(s): too few to tell"
    return (f"x{r.estimate:.3g} [{r.low:.3g}, {r.high:.3g}] ({fmt.signed_percent(r.estimate - 1)}), "
            f"p={r.p_value:.2g}, {r.rounds} rounds")


def _heading(report: GateReport) -> str:
    return (f"proofbench gate: {report.head[:8]} against its merge-base {report.base[:8]}, {report.rounds} "
            f"alternating round(s) in {report.seconds:.0f} s" + (" (time budget reached)" if report.stopped ==
                                                                 "budget" else "")
            + _level(report))


def _level(report: GateReport) -> str:
    # the intervals' confidence: each series', and all of them together where there are several
    together = f", {fmt.confidence(1 - ALPHA)} for the {report.shared} together" if report.shared > 1 else ""
    return f"; intervals at {fmt.confidence(report.confidence)}{' each' if together else ''}{together}"


def _totals(report: GateReport) -> str:
    return ", ".join(f"{report.count(v)} {v.value}" for v in Verdict)


def text(report: GateReport) -> str:
    """One line per series, regressions first."""
    order = {v: i for i, v in enumerate(Verdict)}
    lines = [_heading(report)]
    for s in sorted(report.series, key=lambda s: (order[s.verdict], _series(s))):
        lines.append(f"{s.verdict.value.upper():13} {_series(s)}: {_change(s)}")
    lines.append(_totals(report))
    return "\n".join(lines)


def _status(report: GateReport) -> str:
    # the comment's headline: no "no regression" where some series could not be decided
    if report.exit_code:
        return "regression"
    unsure = report.count(Verdict.INCONCLUSIVE)
    if not report.series:
        return "inconclusive (no series was measured)"
    if unsure == len(report.series):
        return "inconclusive (no series could be decided)"
    return f"{unsure} of {len(report.series)} series inconclusive, no regression in the others" if unsure \
        else "no regression"


def markdown(report: GateReport) -> str:
    """A comment for the pull request: the verdict, then a table of every series that moved."""
    lines = [f"### proofbench: {_status(report)}", "", _heading(report), "", _totals(report), ""]
    moved = [s for s in report.series if s.verdict is not Verdict.NO_CHANGE]
    if moved:
        lines += [f"| verdict | series | head / base [{fmt.confidence(report.confidence)} CI] |", "| --- | --- | --- |"]
        lines += [f"| {s.verdict.value} | `{_series(s)}` | {_change(s).replace('|', '/')} |" for s in moved]
    return "\n".join(lines)


def _number(x: float) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def to_json(report: GateReport) -> dict:
    """The gate's answer as a versioned JSON document (NaN as null)."""
    return {
        "format": FORMAT, "version": FORMAT_VERSION, "exit_code": report.exit_code,
        "base": report.base, "head": report.head, "rounds": report.rounds, "seconds": report.seconds,
        "stopped": report.stopped, "confidence": report.confidence,
        "counts": {v.value: report.count(v) for v in Verdict},
        "series": [{"benchmark": s.target.benchmark, "params": list(s.target.params), "verdict": s.verdict.value,
                    "higher_is_better": s.higher_is_better, "min_step": s.min_step,
                    "ratio": {"estimate": _number(s.ratio.estimate), "low": _number(s.ratio.low),
                              "high": _number(s.ratio.high), "p_value": _number(s.ratio.p_value),
                              "rounds": s.ratio.rounds}} for s in report.series],
    }


def error_json(message: str, exit_code: int = 2) -> dict:
    """The JSON a failed gate prints: an object still."""
    return fmt.error_document(FORMAT, FORMAT_VERSION, message, exit_code)


def error_markdown(message: str, exit_code: int = 2) -> str:
    """The Markdown a failed gate prints: a comment that says it failed, not nothing."""
    return fmt.failed_markdown("gate", message, exit_code)
