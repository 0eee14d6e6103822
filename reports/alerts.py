"""Alerts and people's answers to them, in words for the terminal."""
from __future__ import annotations

from proofbench.db.alerts import Alert, AlertAction, standing
from proofbench.reports import formatting as fmt

VERBS = {"ack": "acknowledged", "accept": "accepted"}


def answered(action: AlertAction) -> str:
    """One line: what was recorded."""
    verb = VERBS[action.action]
    note = f": {action.note}" if action.note else ""
    return f"alert {action.alert_id} {verb} by {action.by} at {fmt.when(action.at)}{note}"


def withdrawn(action: AlertAction) -> str:
    """One line: which answer stopped counting."""
    return f"alert {action.alert_id}: the {action.action} by {action.by} is withdrawn by {action.withdrawn_by}"


def answer_words(alert: Alert) -> str:
    """The standing answer of an alert, or ''."""
    current = standing(alert)
    if current is None:
        return ""
    verb = VERBS[current.action]
    return f"{verb} by {current.by} ({fmt.day(current.at)})" + (f": {current.note}" if current.note else "")


def listing(alerts: list[Alert]) -> str:
    """One line per alert: id, status, kind, series, commit, and its standing answer."""
    if not alerts:
        return "no alerts"
    lines = []
    for a in alerts:
        kind = "regression" if a.regression else "improvement"
        params = ", ".join(f"{k}={v}" for k, v in (a.params or {}).items())
        answer = answer_words(a)
        lines.append(f"{a.id:>5} {a.status:9} {kind:11} {a.benchmark.name} ({params}) on {a.machine.name} at "
                     f"{a.commit.hash[:8]} {fmt.short(a.commit.subject, 50)!r}" + (f"  [{answer}]" if answer else ""))
    return "\n".join(lines)


def bisected(alert: Alert) -> str:
    """What bisecting an alert found: the first bad commit with its subject line and author, or
    the commits it could not tell apart; each measurement, and the commits skipped."""
    b = alert.bisection or {}
    lines = [f"  {s['commit'][:8]}  {fmt.seconds(s['value']) if s['value'] is not None else 'failed':>12}  {s['side']}"
             for s in b.get("steps", [])]
    if b.get("skipped"):
        lines.append(f"skipped (did not build or failed): {', '.join(c[:8] for c in b['skipped'])}")
    c = alert.culprit
    if c is not None:
        head = f"alert {alert.id}: first bad commit {c.hash[:8]} {c.subject!r} by {c.author or 'unknown'}"
    else:
        head = (f"alert {alert.id}: could not tell which commit: the step lies in "
                f"{b.get('first', '')[:8]}..{b.get('last', '')[:8]}")
    measured = (f" ({len(b.get('steps', []))} measurement(s) of {b.get('between', 0)} commit(s), "
                f"{b.get('seconds', 0):.0f} s)")
    return fmt.visible("\n".join([head + measured, *lines]))
