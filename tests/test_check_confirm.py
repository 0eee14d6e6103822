"""The nightly check's suspected steps, their confirmation by re-measurement, and people's answers.

Re-measurement is a fake here (rounds drawn from a known truth); the real one, asv measuring a
git repository's commits again, is exercised by tests/test_nightly_repository.py.
"""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session
from test_check import PARAMS, RATE, TIME, History, _hash, check_json

from proofbench import cli
from proofbench.analysis.budget import Pace
from proofbench.analysis.check import run_check
from proofbench.analysis.confirm import NO_CONFIRM, Confirming, Rounds
from proofbench.db.alerts import Alert, CheckRun, answer, withdraw
from proofbench.db.models import Commit
from proofbench.reports.check import confirmation

BOX = SimpleNamespace(name="box")  # the machine the fake benches measure on: that of History's series


class Remeasure:
    """A fake re-measurement: `rounds` paired rounds whose after / before is `truth` (or, per
    parameter key or benchmark, `truths[key]`), with the load of each round shared by both commits and every
    series (as in one asv run); records every call and the keys it measured."""

    def __init__(self, truth: float | str, rounds: int = 8, seed: int = 3, truths: dict | None = None,
                 spreads: dict | None = None, pause: float = 0.0, clock: SimpleNamespace | None = None) -> None:
        self.truth, self.rounds, self.calls, self.keys = truth, rounds, [], []
        self.truths, self.spreads = truths or {}, spreads or {}  # per key: after / before, a round's own noise
        self.pause, self.clock = pause, clock  # seconds each call takes: slept, or added to a fake clock's `now`
        self.rng = np.random.default_rng(seed)

    def __call__(self, machine, benchmark, keys, before, after, budget):
        self.calls.append((machine, benchmark, before, after))
        self.keys.append(keys)
        if self.clock is not None:
            self.clock.now += self.pause
        else:
            time.sleep(self.pause)
        if isinstance(self.truth, str):
            return self.truth
        load = np.exp(self.rng.normal(0, 0.05, self.rounds))
        def of(given, key, default):  # a key's figure, else its benchmark's, else the default
            return given.get(key, given.get(benchmark, default))
        return {key: self._rounds(before, after, load, of(self.truths, key, self.truth), of(self.spreads, key, 0.01))
                for key in keys}

    def _rounds(self, before, after, load, truth, spread) -> Rounds:
        b = tuple(float(1e-3 * x * np.exp(self.rng.normal(0, spread))) for x in load)
        a = tuple(float(1e-3 * truth * x * np.exp(self.rng.normal(0, spread))) for x in load)
        return Rounds(before, after, b, a, 2.5)


@pytest.fixture
def suspect(sqlite_url):
    """1.0 ms for twelve nights, then 1.3 ms for two: too few points after the step to decide it."""
    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3})
    h.nights(12, 14, {TIME: 1.3e-3})
    return h


def _check(h: History, remeasure=None, **kw):
    return run_check(h.engine, "main", confirming=Confirming(remeasure, **kw))


def test_a_step_with_too_few_points_after_it_is_suspected_and_does_not_fail(suspect, capsys):
    status, report = check_json(suspect.url, capsys, "--no-confirm")
    assert status == 0 and report["counts"]["suspected"] == 1 and report["counts"]["new_regressions"] == 0
    (alert,) = report["alerts"]
    assert (alert["state"], alert["kind"]) == ("suspected", "regression")
    assert alert["confirmation"] == {"outcome": "not_remeasured", "reason": NO_CONFIRM, "asked": "suspected"}


def test_the_report_lists_a_suspected_step_apart_from_the_open_regressions(suspect, capsys, tmp_path):
    # a suspect the check could not decide (here: not measured again) was on no page of the report
    check_json(suspect.url, capsys, "--no-confirm")
    assert cli.main(["report", "--db", suspect.url, "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "regressions.html").read_text()
    opened, suspected = page.split("<h2>Suspected steps (1)</h2>")
    assert "Open regressions (0)" in opened and _hash(12)[:10] not in opened.split("Open regressions")[1]
    suspected = suspected.split("<h2>")[0]
    assert _hash(12)[:10] in suspected and "+29.7%" in suspected
    assert NO_CONFIRM in suspected  # why it is still suspected


def test_a_confirmed_step_becomes_a_new_regression_with_its_rounds_stored(suspect):
    remeasure = Remeasure(1.3)
    report = _check(suspect, remeasure)
    assert report.exit_code == 1
    (found,) = report.findings
    assert found.state == "new" and found.regression
    c = found.confirmation
    assert (c["outcome"], c["reason"], c["rounds"]) == ("confirmed", "step", 8)
    assert c["low"] > 1.0 and c["ratio"] == pytest.approx(1.3, rel=0.03) and c["p_value"] < 0.001
    assert len(c["before_rounds"]) == len(c["after_rounds"]) == 8
    # the newest commit, and the one two before the step the history suspected at 12 (the
    # detector may place it a commit off); the alert stands on those two: the step lies between
    ((_, _, before, after),) = remeasure.calls
    assert (before, after) == (c["before_commit"], c["after_commit"]) == (_hash(10), _hash(13))
    assert (found.previous.hash, found.commit.hash, c["moved_from"]) == (_hash(10), _hash(13), _hash(12))
    again = _check(suspect, remeasure)
    assert [f.state for f in again.findings] == ["open"] and len(remeasure.calls) == 1  # not measured twice


OTHER = {**PARAMS, "variant": "baseline"}  # a second variant of the benchmark of PARAMS
KEYS = tuple(json.dumps(list(p.values())) for p in (PARAMS, OTHER))  # their parameter keys


def _two_variants(url: str, after: float = 1.3e-3, other_after: float = 1.3e-3) -> History:
    """Both variants at 1.0 ms for twelve nights, then at `after` and `other_after` for two."""
    h = History(url)
    for params, level in ((PARAMS, after), (OTHER, other_after)):
        h.nights(0, 12, {TIME: 1.0e-3}, params=params)
        h.nights(12, 14, {TIME: level}, params=params)
    return h


def test_the_series_of_one_benchmark_stepping_at_one_commit_are_measured_again_in_one_run(sqlite_url):
    # Two variants of one benchmark suspected at the same commit, one a true step and one not
    # (a launch-bound GPU call read 25% slower by one process): one re-measurement of the two
    # commits measures both series side by side, and each is decided from its own rounds.
    remeasure = Remeasure(1.3, truths={KEYS[1]: 1.0})
    report = _check(_two_variants(sqlite_url), remeasure)
    assert len(remeasure.calls) == 1 and sorted(remeasure.keys[0]) == sorted(KEYS)
    states = {f.params["variant"]: (f.state, f.confirmation["outcome"]) for f in report.findings}
    assert states == {"optimized": ("new", "confirmed"), "baseline": ("dropped", "dropped")}
    seconds = {f.confirmation["seconds"] for f in report.findings}
    assert seconds == {2.5}  # one run's seconds, which each series' confirmation shows


def test_a_series_whose_rounds_were_measured_with_another_reads_them_after_the_budget_ran_out(sqlite_url):
    remeasure = Remeasure(1.3, pause=0.2)  # longer than the whole budget
    report = _check(_two_variants(sqlite_url), remeasure, budget=0.1)
    assert len(remeasure.calls) == 1
    assert [(f.state, f.confirmation["outcome"]) for f in report.findings] == [("new", "confirmed")] * 2


def test_a_series_reads_every_batch_its_group_measured_though_another_spent_the_budget(sqlite_url):
    # The larger step, too noisy to decide, is measured first and spends the budget in batches;
    # the other series of its benchmark then reads all of those batches, not the first alone.
    remeasure = Remeasure(1.1, rounds=4, spreads={KEYS[0]: 0.5, KEYS[1]: 0.05}, pause=0.1)
    report = _check(_two_variants(sqlite_url, after=1.5e-3), remeasure, budget=0.25)
    told = {f.params["variant"]: f.confirmation for f in report.findings}
    assert len(remeasure.calls) >= 2 and told["optimized"]["rounds"] == 4 * len(remeasure.calls)
    assert len(told["baseline"]["before_rounds"]) == 4 * len(remeasure.calls) or \
        told["baseline"]["outcome"] != "inconclusive", told["baseline"]


def test_a_noisy_larger_suspect_does_not_spend_the_budget_before_a_true_step_has_a_batch(sqlite_url, monkeypatch):
    # A false 50% suspect on a noisy series, measured first (the larger step), takes batch after
    # batch without deciding; a true 20% fall of another benchmark's rate, on a quiet series, is
    # decided by its first batch: it has that batch before the noisy one has its second.
    from proofbench.analysis import confirm

    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3, RATE: 1000.0})
    h.nights(12, 14, {TIME: 1.5e-3, RATE: 800.0})
    clock = SimpleNamespace(now=0.0)  # each batch takes 10 s of a 25 s budget
    monkeypatch.setattr(confirm, "time", SimpleNamespace(monotonic=lambda: clock.now))
    remeasure = Remeasure(1.0, rounds=6, truths={RATE: 0.8}, spreads={TIME: 0.5}, pause=10.0, clock=clock)
    report = _check(h, remeasure, budget=25.0)
    assert [benchmark for _, benchmark, _, _ in remeasure.calls[:2]] == [TIME, RATE]
    told = {f.benchmark: (f.state, f.confirmation["outcome"], f.confirmation["reason"]) for f in report.findings}
    assert told == {RATE: ("new", "confirmed", "step"), TIME: ("suspected", "inconclusive", "wide")}
    assert report.exit_code == 1


def test_series_that_ask_for_other_commits_are_measured_again_apart(sqlite_url):
    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3})
    h.nights(12, 14, {TIME: 1.3e-3})
    h.nights(0, 11, {TIME: 1.0e-3}, params=OTHER)
    h.nights(11, 14, {TIME: 1.3e-3}, params=OTHER)  # three points after: decided, measured at its neighbours
    remeasure = Remeasure(1.3)
    _check(h, remeasure)
    assert sorted(remeasure.keys) == sorted([(KEYS[0],), (KEYS[1],)])


def test_a_dropped_step_is_remembered_and_not_measured_again(suspect):
    remeasure = Remeasure(1.0)
    report = _check(suspect, remeasure)
    assert report.exit_code == 0 and [f.state for f in report.findings] == ["dropped"]
    assert report.findings[0].confirmation["reason"] == "within_min_step"
    assert _check(suspect, remeasure).exit_code == 0 and len(remeasure.calls) == 1  # no newer commit: not asked
    suspect.night(14, {TIME: 1.3e-3})  # a third point: now the history alone decides the step
    decided = _check(suspect, remeasure)
    # decided by the history, measured again at its neighbours (a batch of rounds a call; more
    # batches where one is too wide); still flat there: not raised
    asked = len(remeasure.calls)
    assert decided.exit_code == 0 and [f.state for f in decided.findings] == ["dropped"] and asked > 1
    c = decided.findings[0].confirmation
    assert (c["asked"], c["outcome"]) == ("decided", "dropped")
    assert (c["before_commit"], c["after_commit"]) == (_hash(10), _hash(13))
    suspect.night(15, {TIME: 1.3e-3})  # the same step, a night later: that question has its answer
    assert _check(suspect, remeasure).exit_code == 0 and len(remeasure.calls) == asked


def test_a_suspect_the_history_dropped_is_asked_again_when_suspected_anew(suspect):
    """A drop by the history answers nothing: a suspect measured again without a word
    (inconclusive), then dropped by a check that no longer saw it (here: a floor raised for one
    night), is suspected and measured again the next night, with no newer commit."""
    from proofbench.project import CheckSettings

    remeasure = Remeasure(1.0, rounds=2)  # too few rounds to decide: inconclusive
    assert [f.state for f in _check(suspect, remeasure).findings] == ["suspected"]
    lofty = run_check(suspect.engine, "main", settings=CheckSettings(min_step=0.6), confirming=Confirming(remeasure))
    assert [f.state for f in lofty.findings] == ["dropped"]
    again = _check(suspect, remeasure)
    assert [f.state for f in again.findings] == ["suspected"] and len(remeasure.calls) == 2


def test_a_step_the_history_decides_is_raised_when_its_neighbours_measured_again_show_it(suspect):
    suspect.night(14, {TIME: 1.3e-3})  # three points after the step: the history decides it
    remeasure = Remeasure(1.3)
    report = _check(suspect, remeasure)
    assert report.exit_code == 1 and [f.state for f in report.findings] == ["new"]
    found = report.findings[0]
    c = found.confirmation
    assert (c["asked"], c["outcome"], c["reason"]) == ("decided", "confirmed", "step")
    assert confirmation(c).startswith(f"the history's step re-measured at its neighbours ({c['before_commit'][:8]} vs")
    # its neighbours, not the newest commit: a slow drift since the step confirms nothing
    ((_, _, before, after),) = remeasure.calls
    assert (before, after) == (_hash(found.commit.rank - 2), _hash(found.commit.rank + 1))
    assert _check(suspect, remeasure).exit_code == 0 and len(remeasure.calls) == 1  # open: not measured again


def test_a_decided_step_that_cannot_be_measured_again_is_raised_on_the_historys_word(suspect):
    suspect.night(14, {TIME: 1.3e-3})
    report = _check(suspect, Remeasure("measured on machine 'box'; only this machine's ('ci') series are measured "
                                       "again here"))
    assert report.exit_code == 1 and [f.state for f in report.findings] == ["new"]
    assert report.findings[0].confirmation is None


def test_a_series_that_cannot_be_measured_again_stays_suspected_with_the_reason(suspect):
    report = _check(suspect, Remeasure("measured on machine 'box'; only this machine's ('ci') series are measured "
                                       "again here"))
    assert report.exit_code == 0 and [f.state for f in report.findings] == ["suspected"]
    assert "only this machine's" in report.findings[0].confirmation["reason"]


def test_an_inconclusive_re_measurement_leaves_it_suspected(suspect):
    report = _check(suspect, Remeasure(1.3, rounds=2))  # fewer rounds than the statistic needs
    assert [f.state for f in report.findings] == ["suspected"]
    assert (report.findings[0].confirmation["outcome"], report.findings[0].confirmation["reason"]) == \
        ("inconclusive", "too_few_rounds")


def test_a_spent_budget_leaves_it_suspected_and_says_so(suspect):
    report = _check(suspect, Remeasure(1.3), budget=0.0)
    assert report.findings[0].confirmation["reason"] == "the confirmation budget is 0 s: no time to measure"


def test_an_acknowledged_regression_no_longer_fails_and_withdrawing_it_does(suspect, capsys):
    suspect.nights(14, 20, {TIME: 1.3e-3})
    status, report = check_json(suspect.url, capsys, "--no-confirm")
    assert status == 1
    alert_id = report["alerts"][0]["id"]
    with Session(suspect.engine) as session, session.begin():
        answer(session, alert_id, "ack", "release manager", "expected: the new codec")
    status, report = check_json(suspect.url, capsys, "--no-confirm", "--fail-on", "open")
    assert status == 0 and report["alerts"][0]["answer"]["note"] == "expected: the new codec"
    assert report["alerts"][0]["answer"]["by"] == "release manager"
    with Session(suspect.engine) as session, session.begin():
        withdraw(session, alert_id, "release manager")
    status, report = check_json(suspect.url, capsys, "--no-confirm", "--fail-on", "open")
    assert status == 1 and report["alerts"][0]["answer"] is None


def test_withdrawing_an_answer_says_which_answer_stands_now(suspect, capsys):
    """Answers stack: withdrawing the newest brings back the one before it, and says so."""
    from proofbench import cli

    suspect.nights(14, 20, {TIME: 1.3e-3})
    alert_id = str(check_json(suspect.url, capsys, "--no-confirm")[1]["alerts"][0]["id"])
    for note in ("known", "again"):
        assert cli.main(["alerts", "ack", alert_id, "--note", note, "--by", "qa", "--db", suspect.url]) == 0
    capsys.readouterr()
    assert cli.main(["alerts", "withdraw", alert_id, "--by", "qa", "--db", suspect.url]) == 0
    out = capsys.readouterr().out
    assert "is withdrawn by qa; the earlier answer stands again: acknowledged by qa" in out
    assert out.endswith(": known\n")
    assert cli.main(["alerts", "withdraw", alert_id, "--by", "qa", "--db", suspect.url]) == 0
    assert capsys.readouterr().out.endswith("; no answer stands: the alert counts again\n")


def test_the_text_report_says_what_re_measuring_found(suspect, capsys):
    _check(suspect, Remeasure(1.3))
    with Session(suspect.engine) as session:
        (alert,) = session.scalars(select(Alert)).all()
        assert alert.status == "open" and alert.confirmation["outcome"] == "confirmed"
    capsys.readouterr()
    from test_check import _check as check_command
    check_command(suspect.url, "--no-confirm", fmt="text")
    out = capsys.readouterr().out
    assert "re-measured (" in out and "confirmed (step)" in out and "paired round(s)" in out
    assert "), the history's p=" in out  # its p-value beside the levels is the history's, not the confirmation's


@pytest.mark.parametrize("order", ["position", "date"])
def test_a_confirmed_suspect_names_the_range_measured_again_not_the_historys_guess(suspect, capsys, tmp_path, order):
    # Suspected at 12 from two points; measured again, 10 against 13. Nothing measured says 11 and
    # 12 lie on either side (in CI a noisy point put a suspect a commit early and the check named
    # the commit before the one that made it), so every view names the range, and where the
    # history had put the step; by first-parent position, or where commits are ordered by date,
    # counting the commits with results (`alerts list` cannot count those, and shows the range).
    # The next night's step, decided at 12, is this alert.
    if order == "date":
        with Session(suspect.engine) as session, session.begin():
            session.execute(update(Commit).values(position=None))
    _check(suspect, Remeasure(1.3))
    from test_check import _check as check_command
    for fmt, where in (("text", f"starts in one of 3 commits after {_hash(10)[:8]}, up to {_hash(13)[:8]} "),
                       ("markdown", f"in one of 3 commits after `{_hash(10)[:8]}`, up to `{_hash(13)[:8]}` ")):
        capsys.readouterr()
        check_command(suspect.url, "--no-confirm", fmt=fmt)
        out = capsys.readouterr().out
        assert where in out and f"(the history had put it at {_hash(12)[:8]})" in out, out
    capsys.readouterr()
    check_command(suspect.url, "--no-confirm", fmt="json")
    (alert,) = json.loads(capsys.readouterr().out)["alerts"]
    assert (alert["previous_commit"]["hash"], alert["commit"]["hash"], alert["commits"]) == (_hash(10), _hash(13), 3)
    assert cli.main(["alerts", "list", "--db", suspect.url]) == 0
    counted = " (3 commits)" if order == "position" else ""
    assert f"in {_hash(10)[:8]}..{_hash(13)[:8]}{counted} 'Change number 13'" in capsys.readouterr().out
    site = tmp_path / "site"
    assert cli.main(["report", "--db", suspect.url, "--out", str(site)]) == 0
    page = (site / "regressions.html").read_text()
    assert f"one of 3 commits after <code>{_hash(10)[:10]}</code>" in page and "the step lies between them" in page
    suspect.night(14, {TIME: 1.3e-3})
    assert [f.state for f in _check(suspect, Remeasure(1.3)).findings] == ["open"]


def test_a_confirmed_suspect_that_cannot_move_reaches_back_to_the_older_commit_measured(suspect):
    # another alert of the series and direction (resolved, of another branch's check) stands at 13,
    # the newer commit measured again: the suspect keeps its commit, 12, and its range reaches
    # back to 10, the older one, not to 11, which nobody measured again
    from proofbench.db.models import Benchmark, Environment, Machine

    with Session(suspect.engine) as session, session.begin():
        run = CheckRun(branch="other")
        session.add(run)
        session.flush()
        ids = {c.hash: c.id for c in session.scalars(select(Commit))}
        session.add(Alert(machine_id=session.scalar(select(Machine.id).where(Machine.name == "box")),
                          environment_id=session.scalar(select(Environment.id)),
                          benchmark_id=session.scalar(select(Benchmark.id).where(Benchmark.name == TIME)),
                          params_key=json.dumps(list(PARAMS.values())), params=PARAMS, commit_id=ids[_hash(13)],
                          previous_commit_id=ids[_hash(12)], direction=1, regression=True, before=5e-3, after=6e-3,
                          p_value=0.001, score=5.0, status="resolved", raised_by_id=run.id, seen_by_id=run.id))
    (found,) = [f for f in _check(suspect, Remeasure(1.3)).findings if f.state == "new"]
    assert (found.previous.hash, found.commit.hash) == (_hash(10), _hash(12))
    assert "moved_from" not in found.confirmation


def test_a_level_brought_back_in_a_range_says_the_range(sqlite_url, capsys):
    # A regression at 12; the level comes back at 30, suspected there from two points, confirmed
    # between 28 and 31 and put on them: the regression's level came back in that range, not at 31
    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3})
    h.nights(12, 30, {TIME: 1.3e-3})
    run_check(h.engine, "main")
    h.nights(30, 32, {TIME: 1.0e-3})
    run_check(h.engine, "main", confirming=Confirming(Remeasure(1 / 1.3)))
    h.night(32, {TIME: 1.0e-3})
    from test_check import _check as check_command
    capsys.readouterr()
    check_command(sqlite_url, "--no-confirm", "--no-record", fmt="text")
    assert f"level back in one of 3 commits after {_hash(28)[:8]}, up to {_hash(31)[:8]} 'Change number 31'" \
        in capsys.readouterr().out
    status, report = check_json(sqlite_url, capsys, "--no-confirm")
    (resolved,) = [a for a in report["alerts"] if a["kind"] == "regression"]
    assert (resolved["resolved_after"]["hash"], resolved["resolved_at"]["hash"]) == (_hash(28), _hash(31))


def test_a_confirmation_the_budget_cut_short_says_so():
    # one round in 30 s of a 35 s budget: too few to tell, and the words say why there are no more
    cut = {"outcome": "inconclusive", "reason": "too_few_rounds", "rounds": 1, "seconds": 30.2, "stopped": "budget",
           "before_commit": "a" * 10, "after_commit": "b" * 10}
    assert confirmation(cut) == ("re-measured (aaaaaaaa vs bbbbbbbb): inconclusive (too few rounds), no interval, "
                                 "1 paired round(s) in 30 s before the confirmation budget ran out")
    assert confirmation({**cut, "stopped": "rounds"}).endswith("1 paired round(s) in 30 s")
    decided = {**cut, "outcome": "confirmed", "reason": "step", "ratio": 1.1, "low": 1.05, "high": 1.15, "rounds": 6}
    assert confirmation(decided).endswith("6 paired round(s) in 30 s")  # decided: the budget changed nothing
    small = {**decided, "outcome": "inconclusive", "reason": "below_min_step"}  # more rounds would not decide it
    assert confirmation(small).endswith("6 paired round(s) in 30 s")


def test_the_notes_name_the_culprit_or_the_range_bisection_left():
    from types import SimpleNamespace

    from proofbench.reports.check import note_lines

    bad = SimpleNamespace(hash="d0b2acd2f5eb0433", subject="Validate twice", author="Team")
    found = {"steps": [{}, {}], "first": bad.hash, "last": bad.hash}
    assert note_lines(None, bad, found, "") == ["first bad commit d0b2acd2 'Validate twice' by Team (bisected, 2 "
                                                 "measurement(s))"]
    alone = {"steps": [], "first": bad.hash, "last": bad.hash}  # the span held one commit: none measured
    assert note_lines(None, bad, alone, "") == ["first bad commit d0b2acd2 'Validate twice' by Team (the one commit "
                                                 "after the last the confirmation read at the old level: nothing to "
                                                 "bisect)"]
    assert note_lines(None, None, {"first": "aaaaaaaaaa", "last": "bbbbbbbbbb"}, "acknowledged by x") == [
        "bisection could not tell: the step lies in aaaaaaaa..bbbbbbbb", "acknowledged by x"]
    assert note_lines(None, None, {"error": "no checkout"}, "") == ["bisection could not run: no checkout"]
    held = {"first": bad.hash, "last": bad.hash, "steps": [{}, {}],
            "check": {"before": "c" * 10, "after": bad.hash, "held": True, "steps": [{"side": "before"}] * 2}}
    assert note_lines(None, bad, held, "") == ["first bad commit d0b2acd2 'Validate twice' by Team (bisected, 4 "
                                               "measurement(s); checked: cccccccc beside d0b2acd2 read at the old "
                                               "level)"]
    wrong = {"first": "a" * 10, "last": "b" * 10,
             "check": {"before": "c" * 10, "after": bad.hash, "held": False, "steps": [{"side": "after"}] * 2}}
    assert note_lines(None, None, wrong, "") == [
        "bisection could not tell: the step lies in aaaaaaaa..bbbbbbbb; checked: cccccccc beside d0b2acd2 read at "
        "the new level, so a commit may have been told on the wrong side"]
    failed = {**wrong, "check": {**wrong["check"], "steps": [{"side": "failed"}]}}
    assert note_lines(None, None, failed, "")[0].endswith("checked: cccccccc beside d0b2acd2 failed, so what the "
                                                          "search ended with is not confirmed")
    sides = [{"side": "failed"}, {"side": "unsure"}, {"side": "failed"}]  # run again once, then given up
    twice = {**wrong, "check": {**wrong["check"], "steps": sides}}
    assert note_lines(None, None, twice, "")[0].endswith("d0b2acd2 failed 2 times, so what the search ended with is "
                                                         "not confirmed")
    assert note_lines(None, None, None, "") == []


def test_a_dropped_step_is_asked_again_once_a_newer_commit_arrives(sqlite_url):
    # Night 12 reads high by chance and is dropped; night 13 brings the real step (still too few
    # points after it for the history to decide): the dropped alert must not hide it.
    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3})
    h.night(12, {TIME: 1.3e-3})
    assert [f.state for f in _check(h, Remeasure(1.0)).findings] == ["dropped"]
    same = Remeasure(1.3)
    assert _check(h, same).exit_code == 0 and same.calls == []  # nothing new to ask
    h.night(13, {TIME: 1.3e-3})
    remeasure = Remeasure(1.3)
    report = _check(h, remeasure)
    assert report.exit_code == 1 and [f.state for f in report.findings] == ["new"]
    ((_, _, _, after),) = remeasure.calls
    assert after == _hash(13) == report.findings[0].confirmation["after_commit"]


def _bisected(suspect: History, monkeypatch, at_12: float):
    # the suspect confirmed (measured again: x1.3) and bisected among 11..13, commit 12 reading
    # `at_12`, those before it 1.0 ms and 13 1.3 ms
    from proofbench.analysis import bisect

    monkeypatch.setattr(bisect, "between", lambda repo, branch, older, newer: [_hash(i) for i in range(11, 14)])
    truth = {_hash(i): 1.0e-3 for i in range(12)} | {_hash(12): at_12, _hash(13): 1.3e-3}
    bench = SimpleNamespace(repo=None, branch="main", machine=BOX,
                            beside=lambda target, commit, reference, label, **order: (truth[commit], truth[reference]))
    return _check(suspect, Remeasure(1.3), bisect=lambda session, alert, seconds: bisect.locate(session, alert, bench))


def test_a_bisection_that_moves_a_confirmed_step_back_says_the_re_measurement_had_put_it_there(suspect,
                                                                                                monkeypatch):
    # The history's place was right (12): the confirmation put the alert on 13, the newer commit it
    # measured, and bisection names 12 and moves it back; the note says who had put it at 13
    from proofbench.reports.check import notes

    (found,) = _bisected(suspect, monkeypatch, at_12=1.3e-3).findings
    assert found.commit.hash == found.culprit.hash == _hash(12) and found.bisection["moved_from"] == _hash(13)
    assert f"the alert moved there from {_hash(13)[:8]}, where the re-measurement had put it" in "; ".join(notes(found))


def test_a_confirmed_step_is_bisected_between_the_re_measured_commits_and_moved_to_the_culprit(suspect, monkeypatch):
    # The history put the step at commit 12 (its value read high); measured again, 12 is at the
    # old level and 13 at the new: the alert moves to 13 and names it.
    (found,) = _bisected(suspect, monkeypatch, at_12=1.0e-3).findings
    assert found.state == "new" and found.commit.hash == _hash(13) and found.culprit.hash == _hash(13)
    # the confirmation put it at 13, the newer commit it measured; bisection leaves it there
    assert found.previous.hash == _hash(12) and found.confirmation["moved_from"] == _hash(12)
    assert "moved_from" not in found.bisection
    # commits 11 and 12, each measured twice (bisect.RUNS) before its side is decided
    assert [(s["commit"], s["side"]) for s in found.bisection["steps"]] == \
        [(_hash(i), "before") for i in (11, 11, 12, 12)]
    # then 12, the culprit's parent, read beside 13 again on fresh runs: at the old level, so the
    # name holds (13 is the reference: the check repeats the search's last comparison)
    check = found.bisection["check"]
    assert (check["before"], check["after"], check["held"]) == (_hash(12), _hash(13), True)
    assert [s["side"] for s in check["steps"]] == ["before", "before"]


def test_where_bisection_cannot_tell_the_alert_goes_to_the_first_commit_measured_again_at_the_new_level(
        suspect, monkeypatch):
    # The history put the step at commit 12 (its value read high); measured again, 11 and 12 read
    # exactly between the levels: the step lies among 11..13, and the alert does not keep the
    # history's guess, it goes to 13, the first commit measured again at the new level, with the
    # last commit known before the range as its previous one
    from proofbench.analysis import bisect

    monkeypatch.setattr(bisect, "between", lambda repo, branch, older, newer: [_hash(i) for i in range(11, 14)])

    def locate(session, alert, seconds):
        before, after = bisect.levels(alert)
        middle = (before * after) ** 0.5 / after  # read beside 13, exactly between the levels
        ratio = {_hash(11): middle, _hash(12): middle, _hash(13): 1.0}
        bench = SimpleNamespace(repo=None, branch="main", machine=BOX,
                                beside=lambda target, commit, reference, label, **order: (ratio[commit], 1.0))
        return bisect.locate(session, alert, bench)

    report = _check(suspect, Remeasure(1.3), bisect=locate)
    (found,) = report.findings
    assert found.culprit is None and (found.bisection["first"], found.bisection["last"]) == (_hash(11), _hash(13))
    assert found.commit.hash == _hash(13) and found.confirmation["moved_from"] == _hash(12)
    assert found.previous.hash == found.confirmation["before_commit"] == _hash(10)


def test_a_confirmed_step_found_again_at_its_commit_is_that_alert_whatever_its_provisional_levels(suspect):
    # A suspect's levels rest on the one or two points after it; the next night's step, at the
    # same commit, may have levels that barely overlap them. It is the same step, not a second
    # alert at that commit (which the database refuses: one step a direction per commit).
    remeasure = Remeasure(1.3)
    first = _check(suspect, remeasure)
    (found,) = first.findings
    assert found.state == "new"
    with Session(suspect.engine) as session, session.begin():
        alert = session.get(Alert, found.id)
        alert.before, alert.after = 0.70e-3, 0.75e-3  # provisional levels far from tonight's
    suspect.night(14, {TIME: 1.3e-3})
    again = _check(suspect, remeasure)
    assert [(f.id, f.state) for f in again.findings] == [(found.id, "open")]
    with Session(suspect.engine) as session:
        assert len(session.scalars(select(Alert)).all()) == 1


def test_the_bisect_command_lists_every_measurement_and_the_check():
    from proofbench.reports.alerts import bisected

    culprit = SimpleNamespace(hash="d0b2acd2f5eb0433", subject="Validate twice", author="Team")
    step = {"commit": "a" * 12, "value": 1.0e-3, "side": "before"}
    after = {"commit": "b" * 12, "value": 1.1e-3, "side": "after"}
    alert = SimpleNamespace(id=3, culprit=culprit, benchmark=SimpleNamespace(unit="seconds"), bisection={
        "between": 3, "seconds": 12.4, "steps": [step, step, after],
        "check": {"before": "a" * 12, "after": culprit.hash, "held": True, "steps": [step, step]}})
    head, *lines = bisected(alert).splitlines()
    assert head == ("alert 3: first bad commit d0b2acd2 'Validate twice' by Team (5 measurement(s) of 2 of the 3 "
                    "commit(s) it may start at, 12 s)")  # what was measured, of the commits the step lay among
    assert lines[3] == "checked: aaaaaaaa beside d0b2acd2 read at the old level"
    assert lines[2].split() == ["bbbbbbbb", "1.1", "ms", "after"]
    assert len(lines) == 6 and all(line.split() == ["aaaaaaaa", "1", "ms", "before"] for line in lines[:2] + lines[4:])
    failed = {"commit": "c" * 12, "value": None, "side": "failed"}  # tried, and it failed: counted apart
    alert.bisection["steps"] = [step, failed, after]
    assert bisected(alert).splitlines()[0].endswith("(5 measurement(s) of 2 of the 3 commit(s) it may start at "
                                                    "(1 more failed), 12 s)")


def test_the_check_says_where_a_bisected_step_starts_by_its_culprit_within_the_measured_range():
    # The culprit lies among commits no run measured: the alert stays at the first measured one,
    # and the check's line said only that range, where `alerts list` named the culprit.
    from proofbench.analysis.series import CommitRef
    from proofbench.reports.check import _starts

    def ref(position: int, subject: str) -> CommitRef:
        return CommitRef(position, _hash(position), subject, position, None, None, position)

    f = SimpleNamespace(commit=ref(8, "Docs 8"), previous=ref(5, "Docs 5"), culprit=ref(7, "Count it twice"))
    assert _starts(f) == f"at {_hash(7)[:8]} 'Count it twice' (bisected, one of 3 commits after {_hash(5)[:8]}, " \
        f"up to {_hash(8)[:8]})"
    assert _starts(f, "`", quote=False).startswith(f"at `{_hash(7)[:8]}` Count it twice (bisected, one of 3")
    culprit = ref(7, "Count it twice")
    measured = SimpleNamespace(commit=culprit, previous=ref(6, "Docs 6"), culprit=culprit)
    assert _starts(measured) == f"at {_hash(7)[:8]} 'Count it twice' (bisected)"
    assert _starts(measured, place=lambda c: f"position {c.position}") == \
        f"at {_hash(7)[:8]} 'Count it twice' (position 7; bisected)"
    # a culprit only bisection measured, not placed in the order yet (rank -1): no place, no range
    unplaced = CommitRef(99, "f" * 40, "Count it twice", None, None, None, -1)
    f = SimpleNamespace(commit=ref(8, "Docs 8"), previous=ref(5, "Docs 5"), culprit=unplaced)
    assert _starts(f, place=lambda c: "never asked") == "at ffffffff 'Count it twice' (bisected)"
    assert _starts(SimpleNamespace(commit=ref(8, "Docs 8"), previous=ref(5, "Docs 5"), culprit=None)) == \
        f"in one of 3 commits after {_hash(5)[:8]}, up to {_hash(8)[:8]} 'Docs 8'"


def test_alerts_list_names_the_culprit_bisection_found_not_the_commit_the_history_measured():
    # A range measured every 4th commit: bisection names commit 9, which the history never
    # measured, so the alert stays at 11, the first commit measured at the new level. The list
    # named 11's subject line ('Docs 11') after the culprit was known.
    from proofbench.reports.alerts import listing

    def commit(i, subject):
        return SimpleNamespace(hash=_hash(i), subject=subject, position=i)

    alert = dict(id=1, status="open", regression=True, params={"variant": "baseline"},
                 benchmark=SimpleNamespace(name="features.Score.time_call"), machine=SimpleNamespace(name="box"),
                 commit=commit(11, "Docs 11"), previous_commit=commit(8, "Docs 8"), actions=[])
    named = listing([SimpleNamespace(**alert, culprit=commit(9, "Validate twice"))])
    assert named.endswith(f"on box at {_hash(9)[:8]} 'Validate twice' (bisected)")
    unnamed = listing([SimpleNamespace(**alert, culprit=None)])
    assert unnamed.endswith(f"on box in {_hash(8)[:8]}..{_hash(11)[:8]} (3 commits) 'Docs 11'")


def test_a_bisection_of_a_speedup_shows_its_values_as_speedups_not_seconds():
    from proofbench.reports.alerts import bisected

    steps = [{"commit": "a" * 12, "value": 44.9, "side": "after"},
             {"commit": "b" * 12, "value": None, "side": "failed"}]
    alert = SimpleNamespace(id=4, culprit=None, benchmark=SimpleNamespace(unit="x"), bisection={
        "between": 4, "seconds": 3.0, "first": "a" * 12, "last": "c" * 12, "steps": steps})
    _, first, second = bisected(alert).splitlines()
    assert first.split() == ["aaaaaaaa", "44.9", "x", "after"] and second.split() == ["bbbbbbbb", "failed", "failed"]


def test_the_bisect_command_names_the_culprit_and_exits_by_what_it_found(suspect, monkeypatch, tmp_path, capsys):
    # `proofbench bisect ID` through the real entry point: 0 when it names the first bad commit,
    # 1 when it cannot tell (the exit status was once read off the alert after its session closed)
    from conftest import make_project

    from proofbench import cli
    from proofbench.analysis import bisect
    from proofbench.cli import bisect as command

    (found,) = _check(suspect, Remeasure(1.3)).findings
    with Session(suspect.engine) as session:
        before, after = bisect.levels(session.get(Alert, found.id))
    project = make_project(tmp_path / "bench")
    monkeypatch.setattr(bisect, "between", lambda repo, branch, older, newer: [_hash(i) for i in range(11, 14)])
    middle = (before * after) ** 0.5  # exactly between the levels: never told
    for truth, status in (({_hash(11): before, _hash(12): before}, 0), ({_hash(11): middle, _hash(12): middle}, 1)):
        truth |= {_hash(10): before, _hash(13): after}
        bench = SimpleNamespace(repo=None, branch="main", machine=BOX,
                                beside=lambda target, commit, reference, label, _t=truth, **order: (
                                    _t[commit], _t[reference]))
        monkeypatch.setattr(command, "bench", lambda found_project, profile, _b=bench: _b)
        capsys.readouterr()
        assert cli.main(["bisect", str(found.id), "--db", suspect.url, "--project", str(project)]) == status
        out = capsys.readouterr().out
        assert (f"first bad commit {_hash(13)[:8]}" in out) == (status == 0), out
        assert ("could not tell which commit" in out) == (status == 1), out
    assert cli.main(["bisect", str(found.id), "--budget", "0", "--db", suspect.url, "--project", str(project)]) == 2
    assert capsys.readouterr().err.strip().endswith("--budget must be a positive number of seconds, got 0")
    elsewhere = SimpleNamespace(repo=None, branch="main", machine=SimpleNamespace(name="elsewhere"))
    monkeypatch.setattr(command, "bench", lambda found_project, profile: elsewhere)
    assert cli.main(["bisect", str(found.id), "--db", suspect.url, "--project", str(project)]) == 2
    assert capsys.readouterr().err.strip().endswith("measured on machine 'box'; only this machine's ('elsewhere') "
                                                   "alerts are bisected here")


def test_the_bisect_command_refuses_an_alert_its_re_measurement_dropped(suspect, tmp_path, capsys):
    # a bisection of a step the re-measurement found none of spent minutes and stored "the step
    # lies in ..." on the dropped alert
    from conftest import make_project

    from proofbench import cli

    (found,) = _check(suspect, Remeasure(1.0)).findings
    assert found.state == "dropped"
    project = make_project(tmp_path / "bench")
    assert cli.main(["bisect", str(found.id), "--db", suspect.url, "--project", str(project)]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"proofbench: alert {found.id} was dropped: re-measured (") and \
        line.endswith("; there is no step to bisect") and ": dropped (" in line, line
    with Session(suspect.engine) as session:
        assert session.get(Alert, found.id).bisection is None
    for action in ("ack", "accept"):  # nor is a dropped step answered
        assert cli.main(["alerts", action, str(found.id), "--by", "qa", "--db", suspect.url]) == 2
        verb = "acknowledge" if action == "ack" else action
        assert capsys.readouterr().err.strip() == (f"proofbench: alert {found.id} was dropped: no step stands to "
                                                   f"{verb} (it is suspected anew where newer commits show it again)")


def test_bisections_run_larger_steps_first_within_one_budget(sqlite_url, monkeypatch):
    # two new regressions decided by the history; each bisection takes 10 s of a 10 s budget:
    # the larger step's runs, the other says the budget went on other regressions
    from proofbench.analysis import confirm

    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3, RATE: 1000.0})
    h.nights(12, 24, {TIME: 1.3e-3, RATE: 625.0})  # a throughput 1.6 times lower: the larger step
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(confirm, "time", SimpleNamespace(monotonic=lambda: clock.now))
    asked = []

    def bisect(session, alert, seconds):
        asked.append((alert.benchmark.name, seconds))
        clock.now += 10
        alert.bisection = {"between": 0, "first": alert.commit.hash, "last": alert.commit.hash}

    report = _check(h, None, bisect=bisect, bisect_budget=10)
    assert asked == [(RATE, 10)]
    spent = {f.benchmark: f.bisection for f in report.findings}[TIME]
    assert spent == {"error": "the bisection budget (10 s) was spent on other regressions"}


def test_a_bisection_the_budget_stopped_says_so_in_its_json_and_notes(suspect, monkeypatch):
    # each round takes 50 ms of a 120 ms budget: after the first, the two the commit still needs
    # and the check's two would not fit, so the search stops having narrowed nothing
    import time

    from proofbench.analysis import bisect
    from proofbench.reports.check import culprit

    monkeypatch.setattr(bisect, "between", lambda repo, branch, older, newer: [_hash(i) for i in range(11, 14)])

    def beside(target, commit, reference, label, **order):
        time.sleep(0.05)
        return 1.0e-3, 1.3e-3

    bench = SimpleNamespace(repo=None, branch="main", machine=BOX, beside=beside)
    pace = Pace()  # as a check shares it between its bisections of one benchmark
    report = _check(suspect, Remeasure(1.3),
                    bisect=lambda session, alert, seconds: bisect.locate(session, alert, bench, budget=0.12, pace=pace))
    (found,) = report.findings
    b = found.bisection
    assert (b["budget"], b["stopped"], len(b["steps"])) == (0.12, "budget", 1) and found.culprit is None
    assert pace.first >= 0.05 and pace.again == 0.0  # what the next bisection would plan with
    assert "check" not in b and (b["first"], b["last"]) == (_hash(11), _hash(13))
    assert culprit(None, b) == (f"bisection could not tell: the step lies in {_hash(11)[:8]}..{_hash(13)[:8]} "
                                f"(stopped by its budget of 0.12 s: its next measurement would not fit)")


def test_another_machines_alert_is_not_bisected_here(suspect, monkeypatch):
    # a step of machine box's series may not be on this machine at all (a step that one CPU's
    # instructions make is not on another's): nothing is measured, and the alert says why
    from proofbench.analysis import bisect

    monkeypatch.setattr(bisect, "between", lambda repo, branch, older, newer: [_hash(i) for i in range(11, 14)])
    measured = []
    bench = SimpleNamespace(repo=None, branch="main", machine=SimpleNamespace(name="elsewhere"),
                            beside=lambda *args, **order: measured.append(args) or (1.0e-3, 1.3e-3))
    report = _check(suspect, Remeasure(1.3),
                    bisect=lambda session, alert, seconds: bisect.locate(session, alert, bench))
    (found,) = report.findings
    assert measured == [] and found.culprit is None
    assert found.bisection == {"error": "measured on machine 'box'; only this machine's ('elsewhere') alerts are "
                                        "bisected here"}


def test_a_bisection_budget_of_nothing_says_there_was_no_time(sqlite_url):
    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3})
    h.nights(12, 24, {TIME: 1.3e-3})
    asked = []
    report = _check(h, None, bisect=lambda session, alert, seconds: asked.append(alert), bisect_budget=0)
    assert asked == [] and report.findings[0].bisection == {"error": "the bisection budget is 0 s: no time to measure"}


def test_a_series_is_measured_again_with_the_profile_its_newest_result_was_measured_with(sqlite_url, monkeypatch):
    # A history run at --profile smoke was measured again at the project's default profile (other
    # sizes: asv selected no benchmark, and the suspect showed asv's whole log). Without
    # --profile, each series is measured again, and bisected, at the profile it was measured with.
    import argparse
    import contextlib

    from proofbench.analysis.series import measured_with
    from proofbench.cli import check as check_command
    from proofbench.db.models import Result
    from proofbench.errors import InputError, RunError

    h = History(sqlite_url)
    h.nights(0, 3, {TIME: 1.0e-3, RATE: 1000.0})
    with Session(h.engine) as session, session.begin():
        session.execute(update(Result).values(profile="quick"))
        newest = session.scalar(select(Result.id).where(Result.benchmark_id == 1).order_by(Result.id.desc()))
        session.execute(update(Result).where(Result.id == newest).values(profile="smoke"))
    with Session(h.engine) as session:
        stored = measured_with(session)
        assert stored == {("box", TIME, KEYS[0]): "smoke", ("box", RATE, KEYS[0]): "quick"}
        assert measured_with(session, "box", RATE) == {("box", RATE, KEYS[0]): "quick"}
        assert measured_with(session, "other") == {}

    def bench(found, profile, machine):
        raise InputError(f"asked for the suite at {profile}")

    monkeypatch.setattr("proofbench.cli.common.bench", bench)
    monkeypatch.setattr("proofbench.cli.common.measuring", lambda found: contextlib.nullcontext())
    monkeypatch.setattr("proofbench.machine.capture.capture", lambda: BOX)
    for given, expected in ((None, "smoke"), ("full", "full")):
        args = argparse.Namespace(profile=given, confirm_rounds=6, confirm_budget=60.0, bisect_budget=60.0,
                                  no_confirm=False, bisect=True)
        confirming = check_command._confirming(args, object(), stored if given is None else {}, contextlib.ExitStack())
        told = confirming.remeasure("box", TIME, (KEYS[0],), _hash(0), _hash(2), 60.0)
        assert told == f"cannot measure here: asked for the suite at {expected}"
        alert = SimpleNamespace(machine=BOX, benchmark=SimpleNamespace(name=TIME), params_key=KEYS[0])
        with pytest.raises(RunError, match=f"at {expected}$"):
            confirming.bisect(None, alert, 60.0)


def test_why_a_re_measurement_failed_is_one_line_ending_with_what_asv_said_last():
    from proofbench.errors import brief

    log = "asv run over the range failed:\n· Creating environments\n·· Building e54d9bb1\n· No benchmarks selected\n"
    assert brief(log) == "asv run over the range failed; its output's last line: No benchmarks selected"
    assert brief("the benchmark crashed") == "the benchmark crashed"
