"""The nightly check: exit codes, the JSON format, and what "since the last check" means.

Histories are written straight into SQLite (one commit a night, five samples a night,
1% noise, seeded), so each test knows exactly where the step is.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import subprocess

import numpy as np
import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from proofbench import cli
from proofbench.analysis.check import run_check
from proofbench.analysis.detect import detect
from proofbench.analysis.series import load
from proofbench.cli import check as check_command
from proofbench.db.alerts import Alert, CheckRun
from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result
from proofbench.db.session import connect
from proofbench.reports.check import FORMAT, FORMAT_VERSION

PARAMS = {"variant": "optimized", "size": "small"}


def _hash(position: int) -> str:
    return hashlib.sha1(f"commit {position}".encode()).hexdigest()


class History:
    """A database with one machine, one environment and benchmarks, filled night by night."""

    def __init__(self, url: str, seed: int = 7) -> None:
        self.url, self.engine = url, connect(url)
        self.rng = np.random.default_rng(seed)
        with Session(self.engine) as session, session.begin():
            session.add_all([Machine(name="box", fingerprint="f1"), Machine(name="other", fingerprint="f2"),
                             Environment(name="virtualenv-py3.11")])
            session.add(Benchmark(name="loading.LmdbRead.time_call", version="1", subject="loading.lmdb_read",
                                  area="loading", metric="time", unit="seconds", higher_is_better=False))
            session.add(Benchmark(name="inference.Batching.track_tokens_per_second", version="1",
                                  subject="inference.batching", area="inference", metric="tokens_per_second",
                                  unit="tokens/s", higher_is_better=True))

    def night(self, position: int, levels: dict[str, float], machine: str = "box", params: dict = PARAMS) -> None:
        """One commit at `position` with a result per benchmark named in `levels` (of `params`)."""
        with Session(self.engine) as session, session.begin():
            commit = session.scalar(select(Commit).where(Commit.hash == _hash(position)))
            if commit is None:
                commit = Commit(hash=_hash(position), subject=f"Change number {position}", branch="main",
                                position=position,
                                committed_at=dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
                                + dt.timedelta(days=position))
                session.add(commit)
                session.flush()
            ids = {"machine": session.scalar(select(Machine.id).where(Machine.name == machine)),
                   "env": session.scalar(select(Environment.id))}
            for name, level in levels.items():
                bench = session.scalar(select(Benchmark).where(Benchmark.name == name).order_by(Benchmark.id.desc()))
                samples = [float(level * np.exp(self.rng.normal(0, 0.01))) for _ in range(5)]
                session.add(Result(benchmark_id=bench.id, machine_id=ids["machine"], commit_id=commit.id,
                                   environment_id=ids["env"], params=params,
                                   params_key=json.dumps(list(params.values())), status="ok",
                                   value=float(np.median(samples)), samples=samples))

    def nights(self, start: int, stop: int, levels: dict[str, float], machine: str = "box",
               params: dict = PARAMS) -> None:
        for position in range(start, stop):
            self.night(position, levels, machine, params)


TIME = "loading.LmdbRead.time_call"
RATE = "inference.Batching.track_tokens_per_second"


def _check(url: str, *extra: str, fmt: str = "json") -> int:
    """`proofbench check` through the real entry point (the one place exit codes are made)."""
    saved = cli.COMMANDS
    cli.COMMANDS = tuple(dict.fromkeys(saved + (check_command,)))  # once listed in cli.py, a no-op
    try:
        return cli.main(["check", "--no-git", "--db", url, "--format", fmt, *extra])
    finally:
        cli.COMMANDS = saved


def check_json(url: str, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    status = _check(url, *extra)
    return status, json.loads(capsys.readouterr().out)


@pytest.fixture
def step(sqlite_url):
    """Time per call 1.0 ms for ten nights, then 1.3 ms for ten: a regression at night 10."""
    h = History(sqlite_url)
    h.nights(0, 10, {TIME: 1.0e-3})
    h.nights(10, 20, {TIME: 1.3e-3})
    return h


def test_a_flat_history_exits_0_with_the_documented_shape(sqlite_url, capsys):
    History(sqlite_url).nights(0, 12, {TIME: 1.0e-3, RATE: 5000.0})
    status, report = check_json(sqlite_url, capsys)
    assert status == 0
    assert list(report) == ["format", "version", "status", "exit_code", "check", "counts", "alerts"]
    assert (report["format"], report["version"], report["status"], report["exit_code"]) == (FORMAT, FORMAT_VERSION,
                                                                                             "ok", 0)
    assert set(report["check"]) == {"id", "at", "branch", "since", "recorded", "fail_on", "order", "previous",
                                    "unmatched_rules"}
    assert report["check"]["branch"] == "main" and report["check"]["previous"] is None
    assert report["check"]["order"] == ["first-parent history"]
    assert report["counts"] == {"series": 2, "unchecked_series": 0, "unchecked_commits": 0, "new_regressions": 0,
                                "new_improvements": 0,
                                "still_open_regressions": 0, "still_open_improvements": 0, "suspected": 0,
                                "dropped": 0, "resolved": 0}
    assert report["alerts"] == []


def test_a_slowdown_is_a_new_regression_naming_its_commit(step, capsys):
    status, report = check_json(step.url, capsys)
    assert status == 1 and report["status"] == "regression" and report["counts"]["new_regressions"] == 1
    (alert,) = report["alerts"]
    assert set(alert) == {"id", "state", "kind", "series", "commit", "previous_commit", "before", "after", "ratio",
                          "p_value", "score", "first_reported", "resolved_at", "confirmation", "culprit", "bisection",
                          "answer", "step", "resolved_after", "commits"}
    assert (alert["state"], alert["kind"]) == ("new", "regression")
    assert (alert["confirmation"], alert["culprit"], alert["bisection"], alert["answer"]) == (None,) * 4
    assert alert["series"] == {"machine": "box", "environment": "virtualenv-py3.11", "benchmark": TIME,
                               "subject": "loading.lmdb_read", "metric": "time", "unit": "seconds",
                               "higher_is_better": False, "params": PARAMS, "version": "1"}
    assert alert["commit"]["hash"] == _hash(10) and alert["commit"]["subject"] == "Change number 10"
    assert alert["commit"]["short"] == _hash(10)[:8] and alert["commit"]["position"] == 10
    assert alert["previous_commit"]["hash"] == _hash(9) and alert["commits"] == 1
    assert alert["before"] == pytest.approx(1.0e-3, rel=0.02) and alert["after"] == pytest.approx(1.3e-3, rel=0.02)
    assert alert["ratio"] == pytest.approx(1.3, rel=0.03) and alert["p_value"] < 0.003
    assert alert["first_reported"]["check"] == report["check"]["id"] and alert["resolved_at"] is None


def test_the_next_check_reports_it_still_open_not_new(step, capsys):
    first_status, first = check_json(step.url, capsys)
    step.nights(20, 22, {TIME: 1.3e-3})
    status, second = check_json(step.url, capsys)
    assert (first_status, status) == (1, 0)
    (alert,) = second["alerts"]
    assert alert["state"] == "open" and alert["id"] == first["alerts"][0]["id"]
    assert alert["first_reported"] == first["alerts"][0]["first_reported"]
    assert second["check"]["previous"]["id"] == first["check"]["id"]
    assert second["counts"]["new_regressions"] == 0 and second["counts"]["still_open_regressions"] == 1
    assert check_json(step.url, capsys, "--fail-on", "open")[0] == 1  # still broken, if asked


def test_an_alert_does_not_move_when_the_step_is_found_a_little_later(step, capsys):
    _, first = check_json(step.url, capsys)
    with Session(step.engine) as session, session.begin():  # nights 10 and 11 measured again: old level
        ids = session.scalars(select(Commit.id).where(Commit.position.in_([10, 11]))).all()
        session.execute(delete(Result).where(Result.commit_id.in_(ids)))
    step.night(10, {TIME: 1.0e-3})
    step.night(11, {TIME: 1.0e-3})
    with Session(step.engine) as session:
        (s,) = load(session, "main")
    (fresh,) = detect(s.values, samples=s.samples)
    assert s.points[fresh.index].commit.position == 12  # detect alone would now say night 12
    status, second = check_json(step.url, capsys)
    assert status == 0
    (alert,) = second["alerts"]
    assert alert["state"] == "open" and alert["commit"] == first["alerts"][0]["commit"]
    for key in ("before", "after", "ratio", "p_value"):
        assert alert[key] == first["alerts"][0][key]


def test_an_alert_does_not_vanish_when_the_step_is_no_longer_found(step, capsys):
    check_json(step.url, capsys)
    with Session(step.engine) as session, session.begin():  # the slow nights' results are withdrawn
        ids = session.scalars(select(Commit.id).where(Commit.position >= 11)).all()
        session.execute(delete(Result).where(Result.commit_id.in_(ids)))
    with Session(step.engine) as session:
        (s,) = load(session, "main")
    assert detect(s.values, samples=s.samples) == []
    status, report = check_json(step.url, capsys)
    assert status == 0 and [(a["state"], a["commit"]["hash"]) for a in report["alerts"]] == [("open", _hash(10))]


def test_a_fix_resolves_the_regression_and_is_an_improvement(step, capsys):
    check_json(step.url, capsys)
    step.nights(20, 30, {TIME: 1.0e-3})
    status, report = check_json(step.url, capsys)
    assert status == 0
    states = {(a["state"], a["kind"]): a for a in report["alerts"]}
    assert set(states) == {("new", "improvement"), ("resolved", "regression")}
    assert states[("resolved", "regression")]["resolved_at"]["hash"] == _hash(20)
    assert states[("new", "improvement")]["commit"]["hash"] == _hash(20)
    _, later = check_json(step.url, capsys)
    assert [(a["state"], a["kind"]) for a in later["alerts"]] == [("open", "improvement")]


def test_direction_comes_from_the_metric(sqlite_url, capsys):
    h = History(sqlite_url)
    h.nights(0, 10, {TIME: 1.0e-3, RATE: 5000.0})
    h.nights(10, 20, {TIME: 0.7e-3, RATE: 3500.0})  # faster calls, fewer tokens/s
    status, report = check_json(sqlite_url, capsys)
    kinds = {a["series"]["benchmark"]: a["kind"] for a in report["alerts"]}
    assert kinds == {TIME: "improvement", RATE: "regression"} and status == 1
    assert report["alerts"][0]["series"]["benchmark"] == RATE  # regressions come first


def test_only_improvements_exit_0(sqlite_url, capsys):
    h = History(sqlite_url)
    h.nights(0, 10, {TIME: 1.0e-3})
    h.nights(10, 20, {TIME: 0.5e-3})
    status, report = check_json(sqlite_url, capsys)
    assert status == 0 and report["counts"]["new_improvements"] == 1 and report["status"] == "ok"


def test_machines_are_separate_series(sqlite_url, capsys):
    h = History(sqlite_url)
    h.nights(0, 20, {TIME: 1.0e-3}, machine="other")
    h.nights(0, 10, {TIME: 1.0e-3})
    h.nights(10, 20, {TIME: 1.3e-3})
    _, report = check_json(sqlite_url, capsys)
    assert report["counts"]["series"] == 2
    assert [a["series"]["machine"] for a in report["alerts"]] == ["box"]


def test_since_limits_the_report_to_later_commits(step, capsys):
    assert check_json(step.url, capsys, "--since", _hash(15)[:10], "--no-record")[1]["alerts"] == []
    status, report = check_json(step.url, capsys, "--since", _hash(10), "--no-record")
    assert status == 1 and [a["commit"]["hash"] for a in report["alerts"]] == [_hash(10)]
    assert check_json(step.url, capsys, "--since", "2026-11-16", "--no-record")[0] == 0  # night 15 on
    assert check_json(step.url, capsys, "--since", "2026-11-05", "--no-record")[0] == 1


def test_no_record_looks_without_remembering(step, capsys):
    status, report = check_json(step.url, capsys, "--no-record")
    assert status == 1 and report["check"]["recorded"] is False and report["alerts"][0]["id"] is None
    with Session(step.engine) as session:
        assert session.scalars(select(Alert)).all() == [] and session.scalars(select(CheckRun)).all() == []
    assert check_json(step.url, capsys)[1]["alerts"][0]["state"] == "new"


def test_errors_exit_2_and_still_print_json(step, capsys):
    status, report = check_json(step.url, capsys, "--since", "no-such-revision")
    assert status == 2 and report["status"] == "error" and "no-such-revision" in report["error"]
    status, report = check_json("nosuchdialect://nowhere", capsys)
    assert status == 2 and report["exit_code"] == 2 and "nosuchdialect" in report["error"]
    for budgets, got in ((("--bisect-budget", "-5"), "6, 600 and -5"),
                         (("--confirm-budget", "nan"), "6, nan and 1200")):
        status, report = check_json(step.url, capsys, "--bisect", *budgets)
        assert status == 2 and report["error"] == ("--confirm-rounds must be at least 1 and --confirm-budget and "
                                                   f"--bisect-budget not negative, got {got}")
    capsys.readouterr()
    assert _check(step.url, "--since", "no-such-revision", fmt="markdown") == 2  # the printed view says it too
    assert capsys.readouterr().out.startswith("**proofbench check failed** (exit status 2): --since 'no-such-revision'")


@pytest.mark.parametrize("argv, message", [
    (["gate", "main", "--rounds", "2"], "--rounds must be at least 3 (fewer alternating rounds decide nothing), got 2"),
    (["gate", "main", "--budget", "nan"], "--budget must be a number of seconds, 0 or more, got nan"),
    (["gate", "main", "--budget", "-1"], "--budget must be a number of seconds, 0 or more, got -1"),
    (["bisect", "1", "--budget", "nan"], "--budget must be a positive number of seconds, got nan"),
])
def test_measuring_options_out_of_range_are_one_line_before_anything_runs(capsys, tmp_path, argv, message):
    assert cli.main([*argv, "--project", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"proofbench: {message}"


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_text_and_markdown_name_the_commit_and_the_change(step, capsys, fmt):
    capsys.readouterr()
    assert _check(step.url, fmt=fmt) == 1
    out = capsys.readouterr().out
    assert _hash(10)[:8] in out and "Change number 10" in out and TIME in out
    assert "1 new regression(s)" in out and ("| new | regression |" in out) == (fmt == "markdown")
    (alert_id,) = check_json(step.url, capsys)[1]["alerts"][0]["id"],
    assert f"alert {alert_id}: {TIME}" in out  # the id `alerts ack` takes
    assert "estimated at" not in out  # levels 30% apart, the estimate too: one figure


def test_two_asv_versions_of_one_benchmark_are_told_apart_in_text_and_markdown(step):
    # a new version (the benchmark's code changed) is a series of its own; shown alone, an alert
    # needs no version, beside another version's it names its own
    from dataclasses import replace

    from proofbench.reports.check import markdown, text

    report = run_check(step.engine, "main", record=False)
    (alone,) = report.findings
    assert "version" not in text(report) and "version" not in markdown(report)
    both = replace(report, findings=(alone, replace(alone, version="2" * 20, params={**PARAMS})))
    for out in (text(both), markdown(both)):
        assert f"{TIME} (variant=optimized, size=small, version 1) on box" in out
        assert f"{TIME} (variant=optimized, size=small, version {'2' * 12}) on box" in out
    bare = replace(report, findings=tuple(replace(f, params={}) for f in both.findings))  # no parameters
    assert f"{TIME} (version 1) on box" in text(bare)


def test_a_step_beside_a_slope_shows_the_estimate_the_floor_was_held_against(sqlite_url, capsys, tmp_path):
    """A 4% step on a history falling 0.15% a commit: the medians of its sides read about 1%
    down (each side's median sits mid-slope), while the detector, the slope taken out, reads a
    4% rise, the figure the 3% floor let through. Both are shown, never a lone "-1.0%" under a
    regression that the floor is said to hold at 3%."""
    h = History(sqlite_url)
    for i in range(60):
        h.night(i, {TIME: 1e-3 * math.exp(-0.0015 * i) * (1.04 if i >= 30 else 1.0)})
    code, doc = check_json(sqlite_url, capsys, "--no-confirm")
    (alert,) = doc["alerts"]
    assert code == 1 and alert["kind"] == "regression" and alert["ratio"] < 1
    assert alert["step"] == pytest.approx(0.04, abs=0.01)
    _check(sqlite_url, "--no-confirm", fmt="text")
    assert f"-{100 * (1 - alert['ratio']):.1f}%; the step estimated at +{100 * alert['step']:.1f}%)" \
        in capsys.readouterr().out
    assert cli.main(["report", "--out", str(tmp_path / "site"), "--db", sqlite_url]) == 0
    assert f"the step estimated at +{100 * alert['step']:.1f}%" in (tmp_path / "site" / "regressions.html").read_text()


def test_one_check_writes_its_markdown_view_beside_its_json(step, capsys, tmp_path):
    summary = tmp_path / "out" / "check.md"
    status, report = check_json(step.url, capsys, "--markdown-out", str(summary))
    text = summary.read_text()
    # the same check, both views: the regression is new in each (a second check would see it open)
    assert status == 1 and report["counts"]["new_regressions"] == 1
    assert "1 new regression(s)" in text and "| new | regression |" in text and _hash(10)[:8] in text
    assert [a["state"] for a in check_json(step.url, capsys)[1]["alerts"]] == ["open"]


def test_a_markdown_out_that_cannot_be_written_is_one_line_before_anything_is_checked(step, capsys, tmp_path):
    status, report = check_json(step.url, capsys, "--markdown-out", str(tmp_path))  # a directory
    assert status == 2 and report["error"] == f"--markdown-out {tmp_path}: is a directory; name a file"
    assert check_json(step.url, capsys)[1]["counts"]["new_regressions"] == 1  # nothing was recorded


def test_a_failed_check_leaves_no_earlier_summary_in_its_markdown_out(step, capsys, tmp_path):
    # a nightly job publishes the file: last night's check must not pass for tonight's
    summary = tmp_path / "check.md"
    summary.write_text("last night's check\n")
    status, report = check_json(step.url, capsys, "--since", "no-such-revision", "--markdown-out", str(summary))
    assert status == 2 and summary.read_text() == f"**proofbench check failed** (exit status 2): {report['error']}\n"


def test_an_interrupted_check_records_nothing_and_its_files_say_so(step, capsys, tmp_path, monkeypatch):
    # a job's timeout (SIGTERM, as Ctrl-C) left an empty JSON and last night's Markdown in place
    from proofbench.analysis import check as check_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    summary = tmp_path / "check.md"
    summary.write_text("last night's check\n")
    monkeypatch.setattr(check_module, "run_check", interrupted)
    status, report = check_json(step.url, capsys, "--markdown-out", str(summary))
    said = "interrupted before it ended; nothing of this run was recorded"
    assert status == 130 and (report["status"], report["exit_code"], report["error"]) == ("error", 130, said)
    assert summary.read_text() == f"**proofbench check failed** (exit status 130): {said}\n"
    monkeypatch.undo()
    assert check_json(step.url, capsys)[1]["counts"]["new_regressions"] == 1  # nothing was recorded
    # interrupted once the check is stored, while writing its Markdown: the files must not say "nothing"
    monkeypatch.setattr(check_command, "_write", interrupted)
    status, report = check_json(step.url, capsys, "--markdown-out", str(summary))
    assert status == 130 and report["error"].startswith("interrupted after check run #2 was recorded")


def test_sigterm_ends_any_command_as_ctrl_c_does(tmp_path):
    # a CI job's timeout: ingest and report ended with 143 and nothing said, check and history with 130
    import signal
    import sys

    script = ("import sys, time\nfrom proofbench import cli\n"
              "cli.table.handle = lambda args: (print('ready', flush=True), time.sleep(60))\n"
              "sys.argv = ['proofbench', 'table']\ncli.run()\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and err.startswith("proofbench: interrupted; nothing is half-written"), err


def test_a_mistyped_database_path_is_an_error_never_an_empty_database_that_passes(capsys, tmp_path):
    # a check, a report or an alerts command given a SQLite file that is not there makes none
    missing = tmp_path / "no-such-directory" / "nightly.sqlite"
    status, report = check_json(f"sqlite:///{missing}", capsys)
    assert status == 2 and report["error"] == (
        f"sqlite:///{missing}: no such database; nothing has been measured into it (`proofbench run`, `history` or "
        f"`ingest` make it; is the path right?)")
    for argv in (["alerts", "list"], ["report", "--out", str(tmp_path / "site")], ["table"]):
        assert cli.main([*argv, "--db", f"sqlite:///{missing}"]) == 2, argv
        assert "no such database" in capsys.readouterr().err
    assert not missing.parent.exists()


def test_a_missing_database_named_by_a_relative_path_says_where_it_was_looked_for(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # --db is read from the working directory, not the project's
    status, report = check_json("sqlite:///.proofbench/proofbench.sqlite", capsys)
    assert status == 2 and report["error"].startswith(
        f"sqlite:///.proofbench/proofbench.sqlite: no such database ({tmp_path}/.proofbench/proofbench.sqlite: a "
        f"relative path is read from here); nothing has been measured into it")


@pytest.mark.parametrize("form", ["file:{path}", "file://{path}", "file://localhost{path}"])
def test_a_mistyped_path_in_a_sqlite_uri_is_an_error_too(form, capsys, tmp_path):
    # SQLite would make the file it is asked to open: an empty database, and nothing wrong found
    missing = tmp_path / "nightly.sqlite"
    status, report = check_json("sqlite:///" + form.format(path=missing) + "?uri=true", capsys)
    assert status == 2 and report["error"].endswith(
        "no such database; nothing has been measured into it (`proofbench run`, `history` or `ingest` make it; "
        "is the path right?)")
    assert not missing.exists()


def test_a_sqlite_uri_naming_a_database_that_exists_is_read(sqlite_url, capsys):
    path = sqlite_url.removeprefix("sqlite:///")
    History(sqlite_url).nights(0, 12, {TIME: 1.0e-3})
    status, report = check_json(f"sqlite:///file:{path}?uri=true", capsys)
    assert status == 0 and report["counts"]["series"] == 1


def test_a_database_with_no_results_is_an_error_never_a_pass(sqlite_url, capsys):
    History(sqlite_url)  # the schema, and nothing measured
    status, report = check_json(sqlite_url, capsys)
    assert status == 2 and report["error"].endswith("the database holds no results: nothing to check (measure first: "
                                                    "`proofbench run` or `history`; or --db names another database)")


def test_an_empty_database_named_by_a_sqlite_uri_is_named_as_typed(sqlite_url, capsys):
    History(sqlite_url)
    uri = f"sqlite:///file:{sqlite_url.removeprefix('sqlite:///')}?uri=true"
    status, report = check_json(uri, capsys)
    assert status == 2 and report["error"].startswith(f"{uri}: the database holds no results")


def test_run_check_rejects_an_unknown_fail_on(step):
    from proofbench.errors import InputError

    with pytest.raises(InputError, match="fail_on must be one of new, open"):
        run_check(step.engine, "main", fail_on="sometimes")


PLAIN = "bench.Suite.track_throughput"  # a plain asv benchmark: lower is better unless a rule says otherwise


def _plain_history(url: str) -> History:
    h = History(url)
    with Session(h.engine) as session, session.begin():
        session.add(Benchmark(name=PLAIN, version="v1", kind="plain", subject="", area="", metric="track",
                              unit="ops/s", higher_is_better=False, param_names=["variant", "size"]))
    h.nights(0, 10, {PLAIN: 100.0, TIME: 1.0e-3})
    h.nights(10, 20, {PLAIN: 70.0, TIME: 1.02e-3})  # 30% fewer ops/s; 2% slower calls
    return h


def _found(report) -> set[tuple[str, str]]:
    # the steps decided (a wiggle in the last points of a flat series may be suspected, not alerted)
    return {(f.benchmark, f.kind) for f in report.findings if f.state != "suspected"}


def test_thresholds_and_direction_come_from_the_project_file(sqlite_url):
    from proofbench.project import CheckSettings, Rule

    h = _plain_history(sqlite_url)
    # the defaults: a decrease of a plain benchmark is an improvement, a 2% step is below 3%
    assert _found(run_check(h.engine, "main", record=False)) == {(PLAIN, "improvement")}
    rules = CheckSettings(min_step=0.01, rules=(Rule("bench.*", higher_is_better=True),))
    assert _found(run_check(h.engine, "main", record=False, settings=rules)) == {(PLAIN, "regression"),
                                                                               (TIME, "regression")}
    strict = CheckSettings(rules=(Rule("bench.*", min_step=0.5),))  # per pattern: a 30% step is too small
    assert _found(run_check(h.engine, "main", record=False, settings=strict)) == set()


def test_the_suspicion_bar_comes_from_the_project_file(sqlite_url, tmp_path):
    from proofbench.project import CheckSettings, Rule, load

    h = History(sqlite_url)
    h.nights(0, 30, {TIME: 1.0e-3})
    h.night(30, {TIME: 1.004e-3})  # the newest point 1.35 standard errors above the thirty before

    def suspects(settings: CheckSettings) -> list[tuple[str, float]]:
        report = run_check(h.engine, "main", record=False, settings=settings)
        return [(f.state, round(f.score, 2)) for f in report.findings]
    assert suspects(CheckSettings(min_step=0.01)) == [("suspected", 1.35)]  # suspected from 1.2 by default
    assert suspects(CheckSettings(min_step=0.01, suspect_from=1.5)) == []
    per_pattern = CheckSettings(min_step=0.01, suspect_from=1.5, rules=(Rule("loading.*", suspect_from=1.3),))
    assert suspects(per_pattern) == [("suspected", 1.35)]
    project = tmp_path / "proofbench.toml"
    project.write_text('subjects = ["a"]\n[check]\nsuspect_from = 1.5\n'
                       '[[check.rule]]\npattern = "x*"\nsuspect_from = 2\n')
    settings = load(project).check
    assert settings.for_benchmark(TIME).suspect_from == 1.5 and settings.for_benchmark("xy").suspect_from == 2.0


def test_a_weak_step_is_shown_by_detect_but_never_alerted(sqlite_url):
    from proofbench.project import CheckSettings

    h = History(sqlite_url)
    h.nights(0, 30, {TIME: 1.0e-3})
    h.nights(30, 60, {TIME: 1.1e-3})
    assert _found(run_check(h.engine, "main", record=False)) == {(TIME, "regression")}
    # at a level no rank test on 30 runs reaches, the step is only weak: shown, not alerted
    with Session(h.engine) as session:
        (series,) = load(session, "main")
    (weak,) = detect(series.values, samples=series.samples, alpha=1e-30)
    assert weak.weak and weak.index == 30
    assert _found(run_check(h.engine, "main", record=False, settings=CheckSettings(significance=1e-30))) == set()


def test_the_check_command_reads_the_project_files_check_table(sqlite_url, tmp_path, capsys):
    from conftest import make_project

    _plain_history(sqlite_url)
    project = make_project(tmp_path / "bench")
    with (project / "proofbench.toml").open("a") as fh:
        fh.write('\n[check]\nmin_step = 0.01\n[[check.rule]]\npattern = "bench.*"\nhigher_is_better = true\n')
    capsys.readouterr()
    status = cli.main(["check", "--no-git", "--db", sqlite_url, "--format", "json", "--project", str(project)])
    report = json.loads(capsys.readouterr().out)
    kinds = {(a["series"]["benchmark"], a["kind"], a["series"]["higher_is_better"]) for a in report["alerts"]
             if a["state"] != "suspected"}
    assert status == 1 and kinds == {(PLAIN, "regression", True), (TIME, "regression", False)}


def test_a_database_whose_commits_are_not_placed_is_checked_in_date_order(sqlite_url, capsys):
    h = History(sqlite_url)
    h.nights(0, 10, {TIME: 1.0e-3})
    h.nights(10, 20, {TIME: 1.3e-3})
    with Session(h.engine) as session, session.begin():  # as ingested without the repository
        for c in session.scalars(select(Commit)):
            c.position, c.branch, c.results_date, c.committed_at = None, None, c.committed_at, None
    status, report = check_json(sqlite_url, capsys)
    assert status == 1 and report["check"]["order"] == ["results' dates"]
    (alert,) = report["alerts"]
    assert alert["commit"]["hash"] == _hash(10) and alert["commit"]["position"] is None


def test_two_steps_a_few_commits_apart_are_two_alerts(sqlite_url, capsys):
    # A 30% step, and four commits later a threefold one: within RADIUS of each other, but their
    # levels do not overlap, so the second is not the first found again.
    h = History(sqlite_url)
    h.nights(0, 12, {TIME: 1.0e-3})
    h.nights(12, 16, {TIME: 1.3e-3})
    h.nights(16, 24, {TIME: 3.9e-3})
    status, report = check_json(h.url, capsys, "--no-confirm")
    assert status == 1
    assert [(a["state"], a["commit"]["hash"]) for a in report["alerts"]] == [("new", _hash(12)), ("new", _hash(16))]


def test_a_suspect_the_history_no_longer_shows_is_dropped_once_not_kept_suspected(sqlite_url, capsys):
    """One slow night at the end is suspected; nights back at the old level put it within the
    noise. The next check drops it, says so once, and it leaves the alerts still asked about
    (it stayed suspected before: never reported again, never measured again)."""
    h = History(sqlite_url)
    h.nights(0, 20, {TIME: 1.0e-3})
    h.night(20, {TIME: 1.25e-3})
    _, first = check_json(sqlite_url, capsys, "--no-confirm")
    (suspect,) = first["alerts"]
    assert suspect["state"] == "suspected" and suspect["commit"]["hash"] == _hash(20)
    h.nights(21, 28, {TIME: 1.0e-3})
    capsys.readouterr()
    _check(sqlite_url, "--no-confirm", "--no-record", fmt="text")
    assert "dropped by the history: its newer points no longer show this step" in capsys.readouterr().out
    _, second = check_json(sqlite_url, capsys, "--no-confirm")
    assert [(a["id"], a["state"]) for a in second["alerts"]] == [(suspect["id"], "dropped")]
    assert second["counts"]["dropped"] == 1
    _, third = check_json(sqlite_url, capsys, "--no-confirm")
    assert third["alerts"] == []  # reported once
    with Session(connect(sqlite_url)) as session:
        assert session.scalar(select(Alert.status).where(Alert.id == suspect["id"])) == "dropped"


def test_a_suspect_the_history_cannot_decide_yet_stays_suspected_past_five_points(sqlite_url, capsys):
    """A +93% step with one noisy point on either side (a plain asv suite's series, a walkthrough's
    own): suspected with five points after it. With six, past the five points a suspicion looks
    back, the history could neither decide it nor suspect it anew, and the check dropped it "by the
    history": a real regression gone with a false reason. It stays suspected until decided."""
    h = History(sqlite_url)
    levels = [55.8, 55.0, 74.1, 55.5, 108.0, 106.8, 109.4, 93.6, 108.7, 106.2, 107.0, 107.5]
    states = []
    for position, level in enumerate(levels):
        h.night(position, {TIME: level * 1e-6})
        if position >= 8:
            _, report = check_json(sqlite_url, capsys, "--no-confirm")
            states.append([(a["state"], a["commit"]["hash"]) for a in report["alerts"]])
    assert states[:3] == [[("suspected", _hash(4))]] * 3  # five, six and seven points after it
    assert ("new", _hash(4)) in states[-1] and not any(s == "dropped" for night in states for s, _ in night)


def test_a_bisected_alert_goes_to_its_first_bad_commit_once_a_history_measures_it(sqlite_url, capsys):
    # every other commit measured: the alert stood at the first measured commit after the step,
    # bisection named the one before it; a later history measured that one too, and the report
    # still listed the step beside the commit after it (a comment-only one)
    h = History(sqlite_url)
    h.nights(0, 10, {TIME: 1.0e-3})
    h.nights(12, 22, {TIME: 1.3e-3})
    _, first = check_json(sqlite_url, capsys, "--no-confirm")
    (alert,) = first["alerts"]
    assert (alert["state"], alert["commit"]["hash"]) == ("new", _hash(12))
    with Session(h.engine) as session, session.begin():
        culprit = Commit(hash=_hash(10), subject="Change number 10", branch="main", position=10)
        session.add(culprit)
        session.flush()
        session.get(Alert, alert["id"]).culprit_id = culprit.id  # what `proofbench bisect` stores
    h.nights(10, 12, {TIME: 1.3e-3})
    check_json(sqlite_url, capsys, "--no-confirm")
    with Session(h.engine) as session:
        moved = session.get(Alert, alert["id"])
        assert (moved.commit.hash, moved.previous_commit.hash) == (_hash(10), _hash(9))


def test_a_commit_known_only_from_asv_results_is_said_to_have_no_subject(step, capsys):
    # results ingested without their repository: the subject line is not known, not ''
    from sqlalchemy import update

    with Session(step.engine) as session, session.begin():
        session.execute(update(Commit).values(subject=""))
    capsys.readouterr()
    assert _check(step.url, "--no-confirm", fmt="text") == 1
    out = capsys.readouterr().out
    assert f"at {_hash(10)[:8]} (subject unknown: no repository was read)" in out and "''" not in out


def _new_version(h: History) -> None:
    # the benchmark's code changed: asv gives it a new version, a series of its own from here on
    with Session(h.engine) as session, session.begin():
        session.add(Benchmark(name=TIME, version="2", subject="loading.lmdb_read", area="loading", metric="time",
                              unit="seconds", higher_is_better=False))


def test_a_series_a_newer_version_of_its_benchmark_goes_on_from_has_no_suspect_at_its_end(tmp_path, capsys):
    """A step in the last points of a benchmark's old asv version can never be decided: its series
    gets no newer points. Published BLAS results printed 160 such suspects on every check. One
    suspected before the version changed stays as it was, never dropped for a reason it lacks."""
    fresh, before = (f"sqlite:///{tmp_path / name}" for name in ("fresh.sqlite", "before.sqlite"))
    histories = [History(fresh), History(before)]
    for h in histories:
        h.nights(0, 20, {TIME: 1.0e-3})
        h.night(20, {TIME: 1.3e-3})
    _, first = check_json(before, capsys, "--no-confirm")
    assert [(a["state"], a["commit"]["hash"]) for a in first["alerts"]] == [("suspected", _hash(20))]
    for h in histories:
        _new_version(h)
        h.nights(21, 30, {TIME: 0.8e-3})
    for url in (fresh, before):
        _, report = check_json(url, capsys, "--no-confirm")
        assert [a for a in report["alerts"] if a["series"]["version"] == "1"] == []
    with Session(connect(before)) as session:
        assert session.scalar(select(Alert.status).where(Alert.id == first["alerts"][0]["id"])) == "suspected"


def test_a_rule_whose_pattern_matches_no_series_is_named(sqlite_url, capsys, tmp_path):
    """A rule's pattern is a shell-style wildcard; one written as a regular expression matches
    nothing, and the check says so instead of applying the defaults without a word."""
    from proofbench.project import CheckSettings, Rule

    History(sqlite_url).nights(0, 12, {TIME: 1.0e-3})
    settings = CheckSettings(rules=(Rule("^loading\\..*$", min_step=0.5), Rule("loading.*", min_step=0.5)))
    report = run_check(connect(sqlite_url), "main", record=False, settings=settings)
    assert report.unmatched_rules == ("^loading\\..*$",)
    from conftest import make_project

    project = make_project(tmp_path / "bench")
    with (project / "proofbench.toml").open("a") as fh:
        fh.write('\n[check]\n[[check.rule]]\npattern = "^loading\\\\..*$"\nmin_step = 0.5\n')
    capsys.readouterr()
    assert cli.main(["check", "--no-git", "--no-record", "--project", str(project), "--db", sqlite_url]) == 0
    heading, idle = capsys.readouterr().out.splitlines()[:2]
    assert idle.startswith("rule '^loading\\..*$' of the project file matched none of these series")  # as typed
    args = ["check", "--no-git", "--no-record", "--format", "markdown", "--project", str(project), "--db", sqlite_url]
    assert cli.main(args) == 0
    heading, blank, idle = capsys.readouterr().out.splitlines()[:3]
    assert heading.startswith("### proofbench check: ") and "rule" not in heading and not blank
    assert idle.startswith("rule '^loading\\..*$' of the project file matched none")  # a line of its own


def test_a_check_of_one_branch_leaves_another_branchs_suspects_and_since_bounds_the_drops(sqlite_url, capsys):
    """Alerts carry no branch: a check of `release` must not drop `main`'s suspect (its history
    never showed that step), and a check with --since drops only what its report shows."""
    h = History(sqlite_url)
    h.nights(0, 20, {TIME: 1.0e-3})
    h.night(20, {TIME: 1.25e-3})
    (suspect,) = check_json(sqlite_url, capsys, "--no-confirm")[1]["alerts"]
    with Session(h.engine) as session, session.begin():  # a release branch, measured on the same series
        bench = session.scalar(select(Benchmark).where(Benchmark.name == TIME))
        env, box = session.scalar(select(Environment)), session.scalar(select(Machine).where(Machine.name == "box"))
        for position in range(12):
            commit = Commit(hash=hashlib.sha1(f"release {position}".encode()).hexdigest(),
                            subject=f"Release {position}", branch="release", position=position)
            session.add(commit)
            session.flush()
            session.add(Result(benchmark_id=bench.id, machine_id=box.id, commit_id=commit.id, environment_id=env.id,
                               params=PARAMS, params_key=json.dumps(list(PARAMS.values())), status="ok",
                               value=1.0e-3, samples=[1.0e-3] * 5))
    assert check_json(sqlite_url, capsys, "--no-confirm", "--branch", "release")[1]["alerts"] == []
    with Session(h.engine) as session:
        assert session.scalar(select(Alert.status).where(Alert.id == suspect["id"])) == "suspected"
    h.nights(21, 28, {TIME: 1.0e-3})  # main's history no longer shows it; --since after it: not dropped unsaid
    assert check_json(sqlite_url, capsys, "--no-confirm", "--since", _hash(22))[1]["alerts"] == []
    with Session(h.engine) as session:
        assert session.scalar(select(Alert.status).where(Alert.id == suspect["id"])) == "suspected"
    assert [a["state"] for a in check_json(sqlite_url, capsys, "--no-confirm")[1]["alerts"]] == ["dropped"]
