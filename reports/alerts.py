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
    """One line: which answer stopped counting, and what stands now: the answer before it, where
    there was one (answers stack: withdrawing the newest brings back the one it replaced), else
    none, and the alert counts as it did before it was answered."""
    now = answer_words(action.alert)
    stands = f"the earlier answer stands again: {now}" if now else "no answer stands: the alert counts again"
    return (f"alert {action.alert_id}: the {action.action} by {action.by} is withdrawn by {action.withdrawn_by}; "
            f"{stands}")


def answer_words(alert: Alert) -> str:
    """The standing answer of an alert, or ''."""
    current = standing(alert)
    if current is None:
        return ""
    verb = VERBS[current.action]
    return f"{verb} by {current.by} ({fmt.day(current.at)})" + (f": {current.note}" if current.note else "")


def listing(alerts: list[Alert]) -> str:
    """One line per alert: id, status, kind, series, commit (the first bad commit where
    bisection named it), and its standing answer."""
    if not alerts:
        return "no alerts"
    lines = []
    for a in alerts:
        kind = "regression" if a.regression else "improvement"
        params = ", ".join(f"{k}={v}" for k, v in (a.params or {}).items())
        answer = answer_words(a)
        lines.append(f"{a.id:>5} {a.status:9} {kind:11} {a.benchmark.name} ({params}) on {a.machine.name} {_where(a)}"
                     + (f"  [{answer}]" if answer else ""))
    return "\n".join(lines)


def _where(a: Alert) -> str:
    # the commit an alert names, with its subject line: the culprit bisection named (the alert
    # itself stays at the first commit the history measured at the new level), else its range
    if a.culprit is not None:
        return f"at {a.culprit.hash[:8]} {fmt.short(a.culprit.subject, 50)!r} (bisected)"
    n = commits_in_range(a.commit, a.previous_commit)
    at = f"at {a.commit.hash[:8]}" if n == 1 else \
        f"in {a.previous_commit.hash[:8]}..{a.commit.hash[:8]}" + (f" ({n} commits)" if n else "")
    return f"{at} {fmt.short(a.commit.subject, 50)!r}"


def commits_in_range(commit, previous, ranks: tuple[int, int] | None = None) -> int | None:
    """The commits a step's range holds, after `previous` up to `commit`: by first-parent
    `position` where both have one, else by `ranks` where given (the commit's and the previous
    one's among the commits with results: those between with no result are not counted); 1 with
    no previous commit; None where it cannot be told (every view then shows the range)."""
    if previous is None:
        return 1
    if commit.position is not None and previous.position is not None:
        return max(1, commit.position - previous.position)
    return max(1, ranks[0] - ranks[1]) if ranks is not None else None


def bisected(alert: Alert) -> str:
    """What bisecting an alert found: the first bad commit with its subject line and author, or
    the commits it could not tell apart; each measurement, and the commits skipped."""
    b, unit = alert.bisection or {}, alert.benchmark.unit
    lines = [_step(s, unit) for s in b.get("steps", [])]
    if b.get("skipped"):
        lines.append(f"skipped (did not build or failed): {', '.join(c[:8] for c in b['skipped'])}")
    if b.get("check"):
        lines += [checked(b), *(_step(s, unit) for s in b["check"].get("steps") or [])]
    c = alert.culprit
    if c is not None:
        head = f"alert {alert.id}: first bad commit {c.hash[:8]} {c.subject!r} by {c.author or 'unknown'}"
    else:
        head = (f"alert {alert.id}: could not tell which commit: the step lies in "
                f"{b.get('first', '')[:8]}..{b.get('last', '')[:8]}{ran_out(b)}")
    read = {s["commit"] for s in b.get("steps", []) if s["side"] != "failed"}  # of the commits between
    failed = {s["commit"] for s in b.get("steps", []) if s["side"] == "failed"} - read
    measured = (f" ({measurements(b)} measurement(s) of {len(read)} of the {b.get('between', 0)} commit(s) it may "
                f"start at{f' ({len(failed)} more failed)' if failed else ''}, {b.get('seconds', 0):.0f} s)")
    return fmt.visible("\n".join([head + measured, *lines]))


def measurements(b: dict | None) -> int:
    """How many measurements a stored bisection made, its check's included."""
    return len((b or {}).get("steps") or []) + len(((b or {}).get("check") or {}).get("steps") or [])


def ran_out(b: dict | None) -> str:
    """' (stopped by its budget of N s: ...)' where a time budget ended a bisection, else '' (it
    stops where its next measurement would not fit in what is left, not only once all is spent)."""
    b = b or {}
    return (f" (stopped by its budget of {b.get('budget', 0):g} s: its next measurement would not fit)"
            if b.get("stopped") == "budget" else "")


def checked(b: dict | None) -> str:
    """The check of what a bisection ended with (`bisect.Check`), as a clause ('' where none was made)."""
    c = (b or {}).get("check")
    if not c:
        return ""
    pair = f"{str(c.get('before', ''))[:8]} beside {str(c.get('after', ''))[:8]}"
    if c.get("held"):
        return f"checked: {pair} read at the old level"
    told = (c.get("steps") or [{}])[-1].get("side")
    if told == "failed":
        fails = sum(s.get("side") == "failed" for s in c["steps"])
        return f"checked: {pair} failed{f' {fails} times' if fails > 1 else ''}, so what the search ended with " \
               "is not confirmed"
    where = "at the new level" if told == "after" else "between the levels"
    return f"checked: {pair} read {where}, so a commit may have been told on the wrong side"


def _step(s: dict, unit: str) -> str:
    # one measurement of a bisection, in its benchmark's unit
    value = fmt.measured(s["value"], unit) if s["value"] is not None else "failed"
    return f"  {s['commit'][:8]}  {value:>12}  {s['side']}"
