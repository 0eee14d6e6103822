"""The nightly check: change points in every series, remembered as alerts across checks.

Each check runs `proofbench.analysis.detect.detect` over every series of one branch (first-parent
order, or the results' dates where no commit is placed on it; see `proofbench.analysis.series`;
series off that order are counted, not checked) with the thresholds of the project file's `[check]`
table (`proofbench.project.CheckSettings`: the smallest step reported, the significance level, the
shift from which a step too new to decide is suspected, and per benchmark pattern any of these and
the direction: for a plain asv benchmark an increase is a regression unless a rule says higher is
better), and compares what it finds with the alerts earlier checks raised (`db.alerts`):

- a change point of the same series and direction inside an alert's range (after its
  previous commit, up to its commit), or within `RADIUS` points of it with overlapping levels,
  is that alert, found again: the alert keeps its commit and its figures and is only marked
  seen (a suspect confirmed by measuring again stands on the two commits measured, and
  bisection moves an alert to the first bad commit it finds);
- any other change point is a new alert;
- an alert that is not found again stays as it is (it never vanishes); an open alert is
  resolved when a later step of the same series in the opposite direction brings the level
  back past the middle of the alert's step (geometric middle for positive values).

A step at the end of a history with too few points after it for the detector to decide (at most
`Tuning.suspect_after`, 5, see `detect`) and a shift of at least `suspect_from` standard errors
(1.2 unless the project file says otherwise) is *suspected*: kept as an alert of that status, and
measured again (`proofbench.analysis.confirm`: the commit before and the newest, in alternating
rounds) within the check's time budget. Confirmed, it becomes a new alert; dropped, it is kept
as `dropped` and not measured again until a commit newer than those it compared arrives (then,
still suspected, it is suspected anew: the new commit may be the step); inconclusive, or where
it cannot be measured again (another machine's series, no repository to build, confirmation
off), it stays suspected with the reason, and the history decides it once enough points are in.
Until then a suspected step stays suspected while the history still shows it at its place by
the rule's gates (`detect`'s `held`), however many points stand after it; one the newer points
no longer show there is dropped by the history. A series that a newer asv version of its
benchmark goes on from (`series.superseded`) gets no newer points: nothing is suspected at its
end, and what was suspected there stays as it was.

The check reports new alerts, suspected ones, alerts still open, those dropped and those resolved
tonight. Its exit status is 1 when there is a new regression (or, with fail_on="open", any open
one) that nobody has answered (`proofbench alerts ack` / `accept`); suspected steps never fail it.
Its documented, versioned JSON format (docs/nightly.md) is written by `proofbench.reports.check`.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, object_session

from proofbench.analysis import confirm
from proofbench.analysis import series as series_mod
from proofbench.analysis import since as since_mod
from proofbench.analysis.detect import DEFAULT, ChangePoint, detect
from proofbench.analysis.finding import CheckReport, Finding
from proofbench.analysis.series import CommitRef, Order, Series, SeriesKey
from proofbench.analysis.since import Since, first_parent, utc
from proofbench.analysis.tracker import overlap
from proofbench.db.alerts import Alert, CheckRun, move, one_check_at_a_time, other_at, reach_back, standing
from proofbench.db.commits import ordered, place
from proofbench.db.models import Commit
from proofbench.db.session import location, nothing_measured
from proofbench.errors import InputError
from proofbench.project import CheckSettings

RADIUS = 4  # points: a step found again this close to an alert is that alert (as detect.Tracker)
SAME_OVERLAP = 0.5  # share of the smaller step's level range two steps share to be one
STATES = ("new", "suspected", "open", "dropped", "resolved")
FAIL_ON = ("new", "open")


def run_check(engine: Engine, branch: str, *, since: str | None = None, repo: Path | None = None,
              record: bool = True, fail_on: str = "new", now: dt.datetime | None = None,
              settings: CheckSettings | None = None,
              confirming: confirm.Confirming = confirm.Confirming()) -> CheckReport:
    """Check every series of `branch` with `settings` (default: the project file's); with `repo`,
    commits are placed on its first-parent history first, and a database none of whose commits
    with results is on it (even placed by an earlier repository) or with no results is an
    InputError. Suspected steps are measured again as `confirming` says. With `record` False the
    check runs but stores nothing."""
    if fail_on not in FAIL_ON:
        raise InputError(f"check: fail_on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    now = now or dt.datetime.now(dt.UTC)
    settings = settings or CheckSettings()
    with Session(engine) as session:
        one_check_at_a_time(session)
        placed = place(session, history := first_parent(repo, branch), branch) if repo else 0
        order = series_mod.order(session, branch)
        if not order.commits:  # a nightly job's check that read nothing must not pass
            raise InputError(nothing_measured(location(engine), "check"))
        if repo and not set(history) & {c.hash for c in order.commits.values()}:
            raise InputError(f"{repo}: none of the {len(ordered(session))} commit(s) with results is on {branch}'s "
                             f"first-parent history (check --repo and --branch, or check without the repository "
                             f"to order commits by the results' dates)")
        bound = since_mod.parse(session, since, branch, repo, order) if since else None
        previous = session.scalars(select(CheckRun).order_by(CheckRun.id.desc()).limit(1)).first()
        run = CheckRun(started_at=now, branch=branch, since=since or "")
        session.add(run)
        session.flush()
        all_series = series_mod.load(session, branch, order)
        ended = series_mod.superseded(all_series)
        raised, resolved, asked = _update_alerts(session, all_series, run, order, settings, ended)
        gone = _gone(session, [s for s in all_series if s.key not in ended], run, order, bound)
        confirmed, dropped = confirm.settle(asked, confirming, settings)
        _to_span(session, [x for x in asked if x[0] in confirmed])
        dropped += gone
        raised = [a for a in raised if a.status != "dropped"]
        confirm.bisect_new(session, [a for a in raised + confirmed if a.regression and a.status == "open"], confirming)
        findings = _findings(session, run, raised + confirmed, resolved, dropped, bound, order)
        report = CheckReport(run.id if record else None, now.isoformat(timespec="seconds"), branch, since,
                             (previous.id, _iso(previous.started_at)) if previous else None, len(all_series),
                             placed, findings if record else _unrecorded(findings, run.id), fail_on, record,
                             order.basis, series_mod.outside(session, order),
                             settings.unmatched({s.benchmark for s in all_series}),
                             series_mod.commits_outside(session, order))
        _summarise(run, report)
        if record:
            session.commit()
        else:
            session.rollback()
    return report


def _iso(value: dt.datetime | None) -> str:
    return utc(value).isoformat(timespec="seconds") if value is not None else ""


def _update_alerts(session: Session, all_series: list[Series], run: CheckRun, order: Order,
                   settings: CheckSettings, ended: set[SeriesKey]
                   ) -> tuple[list[Alert], list[Alert], list[confirm.Suspected]]:
    """Match tonight's change points to known alerts; returns the alerts raised, those resolved,
    and the steps to measure again (with their series and change point): the suspected ones
    and those the history decided tonight. A series a newer version of its benchmark goes on
    from (`ended`) has no suspects: nothing could ever decide them."""
    known: dict[SeriesKey, list[Alert]] = {}
    for alert in session.scalars(select(Alert).order_by(Alert.id)):
        known.setdefault(_key(alert), []).append(alert)
    raised: list[Alert] = []
    asked: list[confirm.Suspected] = []
    rank = {i: c.rank for i, c in order.commits.items()}
    for s in all_series:
        alerts = known.setdefault(s.key, [])
        held = [(i, a.direction) for a in alerts
                if a.status == "suspected" and (i := s.index_of(a.commit_id)) is not None]
        for cp in _changes(s, settings, held, suspect=s.key not in ended):
            match = next((a for a in alerts if _same(s, a, cp, rank)), None)
            decided = False  # raised tonight by the history's word
            if match is None:
                match = _new_alert(s, cp, run)
                session.add(match)
                alerts.append(match)
                decided = not cp.suspected
            elif match.status in ("suspected", "dropped") and not cp.suspected and not confirm.answered(s, match, cp):
                _restate(match, "open", s, cp, alerts)  # the history alone decides it now
                decided = True
            elif match.status == "dropped" and cp.suspected and confirm.newer_than_remeasured(s, match):
                _restate(match, "suspected", s, cp, alerts)  # a new commit since the re-measurement: ask again
            match.seen_by_id = run.id
            _to_culprit(session, match, s)
            raised += [match] if decided else []
            if match.status == "suspected" or decided:
                asked.append((match, s, cp))
    session.flush()
    return raised, _resolve(known, run, rank), asked


def _gone(session: Session, all_series: list[Series], run: CheckRun, order: Order, bound: Since | None) -> list[Alert]:
    """Suspected alerts whose step tonight's history no longer shows (newer points put it within
    the noise), dropped, to be reported once: else they would stay suspected, never reported nor
    measured again. Only those tonight's report covers: of a series checked tonight, at a commit
    of this branch's order (another branch's suspects are its own checks' business), within
    --since. Suspected anew, one is asked again (`confirm.newer_than_remeasured`)."""
    checked = {s.key for s in all_series}
    gone = []
    for alert in session.scalars(select(Alert).where(Alert.status == "suspected", Alert.seen_by_id != run.id)):
        at = order.commits.get(alert.commit_id)
        if _key(alert) in checked and at is not None and (bound is None or bound.shows(at)):
            alert.status, alert.seen_by_id = "dropped", run.id
            gone.append(alert)
    return gone


def _to_span(session: Session, confirmed: list[confirm.Suspected]) -> None:
    """A suspect confirmed by measuring again stands on what was measured: at the newer of the two
    commits its re-measurement told apart, its previous commit the older, the step between them.
    Its place in the history rested on a point or two that were not measured again (in CI a
    noisy point put a suspect a commit early, and the check named the commit before the one that
    made it). Bisection (`--bisect`) then names the commit within. Where it moves, the
    confirmation keeps the history's place (`moved_from`); where another alert of the series and
    direction stands at the newer commit, it keeps its commit and its range reaches back to the
    older."""
    for alert, s, _ in confirmed:
        c, hashes = alert.confirmation or {}, [p.commit.hash for p in s.points]
        if c.get("before_commit") not in hashes or c.get("after_commit") not in hashes:
            continue
        first, last = hashes.index(c["before_commit"]), hashes.index(c["after_commit"])
        if first >= last:
            continue
        moved = move(session, alert, hashes[first:last + 1], hashes[last], hashes[first + 1])
        if moved:
            alert.confirmation = {**c, "moved_from": moved}
        elif alert.commit_id != s.points[last].commit.id:  # another alert stands there: its range reaches back
            reach_back(session, alert, s.points[first].commit.id)


def _to_culprit(session: Session, alert: Alert, s: Series) -> None:
    """A bisected alert stands at the first measured commit at or after its first bad commit
    (`db.alerts.move`): once a later history measures that commit, the alert goes there, and
    every view names the commit bisection found (the report listed the step beside a
    comment-only commit after it)."""
    if alert.culprit_id is None or alert.culprit_id == alert.commit_id:
        return
    measured = [p.commit.hash for p in s.points if p.value is not None]
    culprit = next((p.commit.hash for p in s.points if p.commit.id == alert.culprit_id and p.value is not None), None)
    if culprit is not None:
        move(session, alert, measured, culprit, culprit)


def _key(alert: Alert) -> SeriesKey:
    return SeriesKey(alert.machine_id, alert.environment_id, alert.benchmark_id, alert.params_key)


def _restate(alert: Alert, status: str, s: Series, cp: ChangePoint, alerts: list[Alert]) -> None:
    # A suspected (or dropped) step the history now decides ("open"), or a dropped one suspected
    # anew with newer commits ("suspected"): tonight's place, unless another alert of the series
    # and direction stands there, and tonight's levels, p-value and score (a suspect's were
    # provisional; a decided step never moves again).
    alert.status = status
    commit_id, previous_id = _place(s, cp)
    if not any(a is not alert and a.commit_id == commit_id and a.direction == cp.direction for a in alerts):
        alert.commit_id, alert.previous_commit_id = commit_id, previous_id
    alert.before, alert.after, alert.step = cp.before, cp.after, cp.step
    alert.p_value, alert.score = cp.p_value, cp.score


def _changes(s: Series, settings: CheckSettings, held: list[tuple[int, int]], suspect: bool) -> list[ChangePoint]:
    # tonight's change points of `s`; with `suspect`, a step too new to decide, and its suspected
    # alerts' places (`held`) tested again, as `detect` does
    samples = s.samples
    rule = settings.for_benchmark(s.benchmark)
    higher = s.higher_is_better if rule.higher_is_better is None else rule.higher_is_better
    found = detect(s.levels, samples=samples if any(x is not None for x in samples) else None,
                   higher_is_better=higher, min_step=rule.min_step, alpha=rule.significance, suspected=suspect,
                   held=held, tuning=replace(DEFAULT, z_suspect=rule.suspect_from))
    return [cp for cp in found if not cp.weak]  # a weak step is shown, never alerted


def _same(s: Series, alert: Alert, cp: ChangePoint, rank: dict[int, int]) -> bool:
    """The same step: same direction, and the alert at the commit where tonight's step starts
    or its range holding it (after its previous commit, up to its commit: a confirmed suspect
    stands on the commits measured again), whatever its stored levels (a suspect's may be
    provisional, from a point or two); or within RADIUS points of it with level ranges that
    overlap by at least half of the smaller (`tracker.overlap`): a 2x step a few commits after a
    30% one is a step of its own, unless it lies inside the alert's range, which no measurement
    told apart."""
    if alert.direction != cp.direction:
        return False
    at = _place(s, cp)[0]
    if alert.commit_id == at or rank.get(alert.previous_commit_id, math.inf) < rank.get(at, -1) \
            <= rank.get(alert.commit_id, -1):
        return True
    if overlap(alert, cp) < SAME_OVERLAP:
        return False
    index = s.index_of(alert.commit_id)
    if index is None:  # the alert's commit has no point here any more: compare by rank
        at = rank.get(alert.commit_id, -1)
        index = sum(1 for p in s.points if p.commit.rank < at)
    return abs(index - cp.index) <= RADIUS


def _place(s: Series, cp: ChangePoint) -> tuple[int, int | None]:
    # the commit where the new level starts, and the last measured commit before it
    previous = next((p.commit for p in reversed(s.points[:cp.index]) if p.value is not None), None)
    return s.points[cp.index].commit.id, previous.id if previous else None


def _new_alert(s: Series, cp: ChangePoint, run: CheckRun) -> Alert:
    commit_id, previous_id = _place(s, cp)
    return Alert(machine_id=s.key.machine_id, environment_id=s.key.environment_id,
                 benchmark_id=s.key.benchmark_id, params_key=s.key.params_key, params=s.params,
                 commit_id=commit_id, previous_commit_id=previous_id,
                 direction=cp.direction, regression=cp.regression, before=cp.before, after=cp.after,
                 p_value=cp.p_value, score=cp.score, step=cp.step, status="suspected" if cp.suspected else "open",
                 raised_by_id=run.id, seen_by_id=run.id)


def _resolve(known: dict[SeriesKey, list[Alert]], run: CheckRun, rank: dict[int, int]) -> list[Alert]:
    """Close open alerts whose level a later opposite step brought back."""
    resolved = []
    for alerts in known.values():
        for alert in alerts:
            if alert.status != "open":
                continue
            undo = next((b for b in _later_opposite(alert, alerts, rank)
                         if brought_back(alert.before, alert.after, b.after)), None)
            if undo is not None:
                alert.status, alert.resolved_by_id, alert.resolved_at_id = "resolved", run.id, undo.commit_id
                resolved.append(alert)
    return resolved


def _later_opposite(alert: Alert, alerts: list[Alert], rank: dict[int, int]) -> list[Alert]:
    at = rank.get(alert.commit_id, -1)
    later = [b for b in alerts if b.direction == -alert.direction and b.status in ("open", "resolved")
             and rank.get(b.commit_id, -1) > at]
    return sorted(later, key=lambda b: rank[b.commit_id])


def brought_back(before: float, after: float, level: float) -> bool:
    """True when `level` is back past the middle of the step `before` -> `after` (the geometric
    middle for positive values): the one rule for when a step is over, stored or found on the fly."""
    if before > 0 and after > 0 and level > 0:
        middle = math.sqrt(before * after)
    else:
        middle = (before + after) / 2
    return level <= middle if after > before else level >= middle


def _findings(session: Session, run: CheckRun, raised: list[Alert], resolved: list[Alert], dropped: list[Alert],
              bound: Since | None, order: Order) -> tuple[Finding, ...]:
    """New, suspected, still open, dropped and just resolved alerts, in a stable order."""
    states = {a.id: ("resolved" if a in resolved else "new") for a in raised}
    states.update({a.id: "resolved" for a in resolved})
    states.update({a.id: "dropped" for a in dropped})
    for alert in session.scalars(select(Alert).where(Alert.status == "open")):
        states.setdefault(alert.id, "open")
    for alert in session.scalars(select(Alert).where(Alert.status == "suspected", Alert.seen_by_id == run.id)):
        states.setdefault(alert.id, "suspected")
    out = []
    for alert_id, state in states.items():
        alert = session.get(Alert, alert_id)
        if bound is not None and not bound.shows(order.commits.get(alert.commit_id)):
            continue
        out.append(_finding(alert, state, run, order))
    states = {s: i for i, s in enumerate(STATES)}
    return tuple(sorted(out, key=lambda f: (states[f.state], not f.regression, f.benchmark,
                                            sorted(f.params.items()), f.machine, f.environment,
                                            f.commit.rank)))


def _ref(commit: Commit | None, order: Order) -> CommitRef | None:
    if commit is None:
        return None
    known = order.commits.get(commit.id)
    return CommitRef(commit.id, commit.hash, commit.subject or "", commit.position,
                     _iso(commit.authored_at) or None, _iso(commit.committed_at) or None,
                     known.rank if known is not None else -1, commit.author or "")


def answer_of(alert: Alert) -> dict | None:
    """The standing ack or accept of `alert` as the check reports it, or None."""
    action = standing(alert)
    return None if action is None else {"action": action.action, "by": action.by, "at": _iso(action.at),
                                         "note": action.note}


def _finding(alert: Alert, state: str, run: CheckRun, order: Order) -> Finding:
    bench = alert.benchmark
    first = alert.raised_by
    # the direction the check judged by (the project file's rule, else the metric's)
    higher = (alert.direction > 0) != bool(alert.regression)
    return Finding(alert.id, state, alert.regression, alert.machine.name, alert.environment.name, bench.name,
                   bench.subject, bench.metric, bench.unit, higher, dict(alert.params or {}),
                   _ref(alert.commit, order), _ref(alert.previous_commit, order), alert.before, alert.after,
                   alert.p_value, alert.score, first.id, _iso(first.started_at), _ref(alert.resolved_at, order),
                   alert.confirmation, _ref(alert.culprit, order), alert.bisection, answer_of(alert), alert.step,
                   bench.version, _ref(_undone_after(alert), order))


def _undone_after(alert: Alert) -> Commit | None:
    # the last commit before the range the level came back in: the opposite step's previous commit
    undo = other_at(object_session(alert), alert, -alert.direction, alert.resolved_at_id) \
        if alert.resolved_at_id is not None else None
    return undo.previous_commit if undo is not None else None


def _unrecorded(findings: tuple[Finding, ...], run_id: int) -> tuple[Finding, ...]:
    # Nothing is stored: ids handed out inside the rolled-back transaction mean nothing.
    return tuple(replace(f, id=None, first_check=None) if f.first_check == run_id else f for f in findings)


def _summarise(run: CheckRun, report: CheckReport) -> None:
    run.series = report.series
    run.new_regressions = report.count("new", True)
    run.new_improvements = report.count("new", False)
    run.open_regressions = report.count("open", True) + run.new_regressions
    run.resolved = sum(1 for f in report.findings if f.state == "resolved")
    run.exit_code = report.exit_code
