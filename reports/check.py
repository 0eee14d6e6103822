"""The nightly check's report as text, Markdown (for a pull request) and the documented JSON.

The JSON format ("proofbench-check", versioned) is described in docs/nightly.md; bots read it, so
its shape changes only with its version.
"""
from __future__ import annotations

import math

from proofbench.analysis.confirm import Reason
from proofbench.analysis.finding import CheckReport, Finding
from proofbench.analysis.series import CommitRef
from proofbench.reports import formatting as fmt
from proofbench.reports.alerts import VERBS, checked, commits_in_range, measurements, ran_out

FORMAT = "proofbench-check"
FORMAT_VERSION = 2  # 2: suspected and dropped states; confirmation, culprit, bisection, answer


def _series(f, versioned: set[str] = frozenset()) -> str:
    # the series in words; with its asv version where the report holds two of that benchmark
    shown = [f"{k}={v}" for k, v in f.params.items()] + ([f"version {f.version[:12]}"] if f.benchmark in versioned
                                                          else [])
    return f"{f.benchmark} ({', '.join(shown)}) on {f.machine}, {f.environment}"


def versioned(findings) -> set[str]:
    """The benchmarks `findings` hold in more than one asv version (its code changed: a series each)."""
    seen: dict[str, set[str]] = {}
    for f in findings:
        seen.setdefault(f.benchmark, set()).add(f.version)
    return {name for name, versions in seen.items() if len(versions) > 1}


def _change(f) -> str:
    # the p-value is the history's; where measuring again decided the step, its own is in the notes
    whose = "the history's " if (f.confirmation or {}).get("outcome") in ("confirmed", "dropped") else ""
    return (f"{fmt.measured(f.before, f.unit)} -> {fmt.measured(f.after, f.unit)} (x{f.ratio:.3g}, "
            f"{f.ratio - 1:+.1%}{_clause(estimated(f.step, f.ratio))}), {whose}p={f.p_value:.2g}")


def estimated(step: float | None, ratio: float) -> str:
    """The detector's estimate of a step where its levels' ratio reads it otherwise (beside a
    slope, or with a wild point in a short window), by a point and a quarter of the step or
    more: the figure the floor was held against ('' where the ratio says the same)."""
    if step is None or not math.isfinite(step) or \
            (math.isfinite(ratio) and abs(step - (ratio - 1)) < max(0.01, abs(step) / 4)):
        return ""
    return f"the step estimated at {step:+.1%}"


def _heading(report) -> str:
    previous = f"previous check #{report.previous_check[0]} at {report.previous_check[1]}" \
        if report.previous_check else "first check"
    since = f", since {report.since}" if report.since else ""
    order = f" ordered by {' then '.join(report.order)}" if report.order else ""
    unchecked = (f" ({report.unchecked} series with no result on {report.branch}'s first-parent history not "
                 f"checked: ingest their results with --repo of their repository, or check them apart)"
                 if report.unchecked else "")
    unchecked += (f" ({report.commits_off} commit(s) with results off {report.branch}'s first-parent history: "
                  f"their points not checked)" if report.commits_off else "")
    return f"proofbench check: branch {report.branch}{since}, {report.series} series{order}{unchecked}, {previous}"


def _idle(report) -> list[str]:
    # the project file's rules that matched no series, each a line, the pattern as typed
    return [f"rule '{p}' of the project file matched none of these series (a rule's pattern is a shell-style "
            f"wildcard, as `*.time_call`, not a regular expression)" for p in report.unmatched_rules]


def _totals(report) -> str:
    resolved, suspected, dropped = (sum(1 for f in report.findings if f.state == state)
                                    for state in ("resolved", "suspected", "dropped"))
    answered = sum(1 for f in report.findings if f.answer is not None and f.regression and f.state in ("new", "open"))
    return (f"{report.count('new', True)} new regression(s), {report.count('new', False)} new improvement(s), "
            f"{report.count('open', True)} regression(s) still open, {suspected} suspected, {dropped} dropped, "
            f"{resolved} resolved" + (f"; {answered} answered (not failing)" if answered else "")
            + ("" if report.recorded else " (not recorded)"))


_WANTING_ROUNDS = (Reason.TOO_FEW_ROUNDS.value, Reason.WIDE.value)  # undecided: more rounds could decide it


def confirmation(c: dict | None) -> str:
    """What re-measuring said of an alert's step (`alerts.confirmation`), in one line ('' when
    it was never tried)."""
    if not c:
        return ""
    if c.get("outcome") == "not_remeasured":
        return f"not measured again: {c.get('reason', '')}"
    interval = (f"x{c['ratio']:.3g} [{c['low']:.3g}, {c['high']:.3g}]" if c.get("ratio") is not None
                and c.get("low") is not None and c.get("high") is not None else "no interval")
    p = f", p={c['p_value']:.2g}" if c.get("p_value") is not None else ""
    where = f" ({c['before_commit'][:8]} vs {c['after_commit'][:8]})" if c.get("before_commit") else ""
    what = "the history's step re-measured at its neighbours" if c.get("asked") == "decided" else "re-measured"
    cut = " before the confirmation budget ran out" if c.get("stopped") == "budget" and \
        c.get("reason") in _WANTING_ROUNDS else ""
    moved = f"; the step lies between them (the history had put it at {c['moved_from'][:8]})" \
        if c.get("moved_from") else ""
    return (f"{what}{where}: {c['outcome']} ({str(c.get('reason', '')).replace('_', ' ')}), {interval}{p}, "
            f"{c.get('rounds', 0)} paired round(s) in {c.get('seconds', 0):.0f} s{cut}{moved}")


def culprit(c, b: dict | None, placed: str = "the history") -> str:
    """What bisection found: `c` the first bad commit (anything with `hash`, `subject` and
    `author`: a stored commit or a CommitRef; None when none was found), `b` the stored
    `alerts.bisection`, `placed` who had put the alert where bisection found it; in one line
    ('' when it did not run)."""
    if c is not None:
        by = f" by {c.author}" if c.author else ""
        measured = measurements(b)
        moved = f"; the alert moved there from {b['moved_from'][:8]}, where {placed} had put it" \
            if (b or {}).get("moved_from") else ""
        how = f"bisected, {measured} measurement(s)" if measured else \
            "the one commit after the last the confirmation read at the old level: nothing to bisect"
        return f"first bad commit {c.hash[:8]} {c.subject or ''!r}{by} ({how}{_clause(checked(b))}){moved}"
    if b and "error" in b:
        return f"bisection could not run: {b['error']}"
    if b:
        return (f"bisection could not tell: the step lies in {b.get('first', '')[:8]}..{b.get('last', '')[:8]}"
                f"{ran_out(b)}{_clause(checked(b))}")
    return ""


def _clause(text: str) -> str:
    return f"; {text}" if text else ""


def note_lines(confirmed: dict | None, first_bad, bisection: dict | None, answered: str) -> list[str]:
    """The lines that follow an alert wherever it is shown: re-measurement, bisection and the
    answer already in words (those that apply)."""
    placed = "the re-measurement" if (confirmed or {}).get("moved_from") else "the history"
    return [line for line in (confirmation(confirmed), culprit(first_bad, bisection, placed), answered) if line]


def notes(f: Finding) -> list[str]:
    """The lines that follow an alert of the check's report."""
    gone = f.state == "dropped" and (f.confirmation or {}).get("outcome") != "dropped"
    return ([GONE] if gone else []) + note_lines(f.confirmation, f.culprit, f.bisection, answer(f.answer))


GONE = "dropped by the history: its newer points no longer show this step"


def answer(a: dict | None) -> str:
    """The standing answer of an alert (`proofbench.analysis.check.answer_of`), in one line ('' when none)."""
    if not a:
        return ""
    return f"{VERBS[a['action']]} by {a['by']} at {a['at']}" + (f": {a['note']}" if a.get("note") else "")


def text(report) -> str:
    """The terminal report: one block per alert, new ones first."""
    lines, split = [_heading(report), *_idle(report)], versioned(report.findings)
    for f in report.findings:
        lines.append(f"{f.state.upper():9} {f.kind:11} {_alert(f)}{_series(f, split)}")
        lines.append(f"    starts {_starts(f, place=_place)}; {_change(f)}")
        if f.resolved_at:
            lines.append(f"    level back {where(f.resolved_at, f.resolved_after)} {f.resolved_at.subject!r}")
        lines += [f"    {line}" for line in notes(f)]
    lines.append(_totals(report))
    return fmt.visible("\n".join(lines))


def span(commit: CommitRef, previous: CommitRef | None) -> int:
    """The commits a step's range holds, after `previous` up to `commit` (by first-parent
    position, else among the commits with results): 1 where measuring named the commit."""
    return commits_in_range(commit, previous, (commit.rank, previous.rank) if previous else None)


def where(commit: CommitRef, previous: CommitRef | None, tick: str = "") -> str:
    """Where a step lies, in words: "at X", or "in one of N commits after Y, up to X" where its
    range holds more than one commit (measuring did not narrow it); each hash between `tick`s."""
    n = span(commit, previous)
    if n == 1:
        return f"at {tick}{commit.short}{tick}"
    return f"in one of {n} commits after {tick}{previous.short}{tick}, up to {tick}{commit.short}{tick}"


def _alert(f: Finding) -> str:
    # the id `alerts ack|accept` answer it by ('' where the check stored nothing)
    return f"alert {f.id}: " if f.id is not None else ""


def _cell(value: str) -> str:
    # one table cell: no pipe, newline or HTML tag from data changes the table
    return fmt.visible(value).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def markdown(report) -> str:
    """The report as a Markdown table, for a pull request or an issue comment."""
    lines, split = [f"### {_cell(_heading(report))}", "", *(f"{_cell(line)}  " for line in _idle(report)),
                    _totals(report), ""], versioned(report.findings)
    if report.findings:
        lines += ["| state | kind | series | commit | before | after | ratio | p | notes |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for f in report.findings:
            lines.append("| " + " | ".join(_cell(c) for c in (
                f.state, f.kind, _alert(f) + _series(f, split), _commit_cell(f),
                fmt.measured(f.before, f.unit), fmt.measured(f.after, f.unit),
                f"x{f.ratio:.3g}{_clause(estimated(f.step, f.ratio))}", f"{f.p_value:.2g}",
                "; ".join(notes(f)))) + " |")
    return "\n".join(lines)


def _commit_cell(f: Finding) -> str:
    # the Markdown commit cell: where the step lies, and the commit's subject line
    return _starts(f, "`", quote=False)


def _starts(f: Finding, tick: str = "", quote: bool = True, place=None) -> str:
    # where the step starts and its commit's subject line (and `place(commit)`, where it is
    # given): the first bad commit where bisection named it, with the measured range it lies in
    # ("at X" alone where that holds one commit)
    def said(commit: CommitRef) -> str:
        if not commit.subject:
            return "(subject unknown: no repository was read)"
        return repr(commit.subject) if quote else commit.subject

    if f.culprit is None:
        return f"{where(f.commit, f.previous, tick)} {said(f.commit)}" + (f" ({place(f.commit)})" if place else "")
    # the range it lies in, where that holds more than one commit and the culprit is placed in it
    # (a commit only bisection measured has no place in the order until the branch is placed again)
    inside = f.previous is not None and f.previous.rank < f.culprit.rank <= f.commit.rank
    within = where(f.commit, f.previous, tick)
    within = f", {within.removeprefix('in ')}" if inside and not within.startswith("at ") else ""
    told = ([place(f.culprit)] if place and f.culprit.rank >= 0 else []) + [f"bisected{within}"]
    return f"at {tick}{f.culprit.short}{tick} {said(f.culprit)} ({'; '.join(told)})"


def _place(commit: CommitRef) -> str:
    # a commit's place in the order: its position on the branch, else its rank by date
    return f"position {commit.position}" if commit.position is not None else f"commit #{commit.rank + 1} by date"


def _commit_json(ref: CommitRef | None) -> dict | None:
    if ref is None:
        return None
    return {"hash": ref.hash, "short": ref.short, "subject": ref.subject, "author": ref.author,
            "position": ref.position, "authored_at": ref.authored_at, "committed_at": ref.committed_at}


def _number(x: float) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def finding_json(f: Finding) -> dict:
    """One alert in the documented JSON format."""
    return {
        "id": f.id, "state": f.state, "kind": f.kind,
        "series": {"machine": f.machine, "environment": f.environment, "benchmark": f.benchmark,
                   "subject": f.subject, "metric": f.metric, "unit": f.unit,
                   "higher_is_better": f.higher_is_better, "params": f.params, "version": f.version},
        "commit": _commit_json(f.commit), "previous_commit": _commit_json(f.previous),
        "commits": span(f.commit, f.previous),
        "before": _number(f.before), "after": _number(f.after), "ratio": _number(f.ratio),
        "p_value": _number(f.p_value), "score": _number(f.score),
        "first_reported": {"check": f.first_check, "at": f.first_reported_at},
        "resolved_at": _commit_json(f.resolved_at),
        "resolved_after": _commit_json(f.resolved_after),
        "confirmation": f.confirmation, "culprit": _commit_json(f.culprit), "bisection": f.bisection,
        "answer": f.answer, "step": _number(f.step),
    }


def to_json(report: CheckReport) -> dict:
    """The whole report in the documented, versioned JSON format (docs/nightly.md)."""
    previous = report.previous_check
    return {
        "format": FORMAT, "version": FORMAT_VERSION, "status": "regression" if report.exit_code else "ok",
        "exit_code": report.exit_code,
        "check": {"id": report.check_id, "at": report.at, "branch": report.branch, "since": report.since,
                  "recorded": report.recorded, "fail_on": report.fail_on, "order": list(report.order),
                  "previous": {"id": previous[0], "at": previous[1]} if previous else None,
                  "unmatched_rules": list(report.unmatched_rules)},
        "counts": {"series": report.series, "unchecked_series": report.unchecked,
                   "unchecked_commits": report.commits_off,
                   "new_regressions": report.count("new", True),
                   "new_improvements": report.count("new", False),
                   "still_open_regressions": report.count("open", True),
                   "still_open_improvements": report.count("open", False),
                   "suspected": sum(1 for f in report.findings if f.state == "suspected"),
                   "dropped": sum(1 for f in report.findings if f.state == "dropped"),
                   "resolved": sum(1 for f in report.findings if f.state == "resolved")},
        "alerts": [finding_json(f) for f in report.findings],
    }


def error_markdown(message: str, exit_code: int = 2) -> str:
    """The Markdown a failed check writes where its summary was asked for (--markdown-out)."""
    return fmt.failed_markdown("check", _cell(message), exit_code)


def error_json(message: str, exit_code: int = 2) -> dict:
    """The JSON a failed check prints (exit status 2, or 3 for an internal error), so bots always get an object."""
    return fmt.error_document(FORMAT, FORMAT_VERSION, message, exit_code)
