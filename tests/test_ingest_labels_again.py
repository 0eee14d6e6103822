"""A plain benchmark first stored with the fallback label (benchmarks.json broken: parameters
p1..pn) takes benchmarks.json's label at a later ingest, a re-ingest of the same files included;
its stored results' and alerts' parameters are renamed with it, once. A label from benchmarks.json,
parameters genuinely named p1..pn included, is never replaced, nor mixed with a fallback's names.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from postgres import db_url, postgres_server, postgres_url  # noqa: F401  (fixtures)
from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.cli import main
from proofbench.db.alerts import Alert, CheckRun
from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result
from proofbench.db.session import connect
from proofbench.pipeline import labels

ENV = "virtualenv-py3.11"
COLUMNS = ["result", "params", "version", "started_at", "duration"]
TWO = "bench.Suite.time_two"  # two parameters
PLAIN = "bench.time_plain"  # none
REAL = {"version": 2,
        TWO: {"type": "time", "unit": "seconds", "version": "v1", "param_names": ["size", "variant"],
              "params": [["1", "2"], ["'a'", "'b'"]]},
        PLAIN: {"type": "time", "unit": "seconds", "version": "v1", "param_names": [], "params": []}}


def write(results: Path, commit: str, value: float = 1e-3) -> Path:
    """A results file as asv 0.6 writes it, of `commit`, under machine `box`."""
    path = results / "box" / f"{commit[:8]}-{ENV}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "commit_hash": commit, "env_name": ENV, "date": 1719663898000,
        "params": {"machine": "box", "python": "3.11", "cpu": "test CPU"}, "python": "3.11",
        "requirements": {}, "env_vars": {}, "result_columns": COLUMNS, "durations": {}, "version": 2,
        "results": {TWO: [[value, 2 * value, 3 * value, 4 * value], [["1", "2"], ["'a'", "'b'"]], "v1",
                          1719664057275, 1.5],
                    PLAIN: [[0.5], [], "v1", 1719664057275, 1.0]}}))
    return path


def ingest(results: Path, url: str, capsys) -> str:
    """`proofbench ingest` of the results directory; what it printed (stderr), one space apart."""
    assert main(["ingest", str(results), "--db", url]) == 0
    return " ".join(capsys.readouterr().err.split())


def stored(url: str, name: str = TWO) -> tuple[list, dict, dict]:
    """The benchmark's parameter names, its results' parameters by (commit's first digit, params_key),
    and its alerts' by params_key."""
    with Session(connect(url)) as session:
        (row,) = session.scalars(select(Benchmark).where(Benchmark.name == name))
        results = {(r.commit.hash[0], r.params_key): r.params
                   for r in session.scalars(select(Result).where(Result.benchmark_id == row.id))}
        alerts = {a.params_key: a.params for a in session.scalars(select(Alert).where(Alert.benchmark_id == row.id))}
        return row.param_names, results, alerts


def add_alert(url: str) -> None:
    """An alert on the series (1, 'a') of TWO, as a check would raise it, its parameters as stored."""
    with Session(connect(url)) as session, session.begin():
        run = CheckRun(branch="main")
        session.add(run)
        session.flush()
        result = session.scalars(select(Result).join(Benchmark).where(Benchmark.name == TWO,
                                                                       Result.params_key == '["1", "a"]')).first()
        session.add(Alert(machine_id=session.scalar(select(Machine.id)),
                          environment_id=session.scalar(select(Environment.id)), benchmark_id=result.benchmark_id,
                          params_key=result.params_key, params=dict(result.params), commit_id=result.commit_id,
                          direction=1, regression=True, before=1.0, after=2.0, p_value=0.001, score=1.0, step=1.0,
                          raised_by_id=run.id, seen_by_id=run.id))


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no project here: the labels are asv's
    return tmp_path / "results"


def test_a_fallback_label_gives_way_to_benchmarks_json_on_a_re_ingest_of_the_same_files(results, db_url, capsys):
    url = db_url  # SQLite and PostgreSQL
    write(results, "1" * 40)
    write(results, "2" * 40, value=2e-3)
    (results / "benchmarks.json").write_text(json.dumps(REAL)[:40])  # truncated: not JSON
    out = ingest(results, url, capsys)
    assert "ingested 2 file(s) holding 10 result(s)" in out and "read as plain ones named p1..pn" in out
    names, before, _ = stored(url)
    assert names == ["p1", "p2"] and before["2", '["2", "b"]'] == {"p1": "2", "p2": "b"}
    add_alert(url)
    out = ingest(results, url, capsys)  # still broken: said again, nothing relabelled
    assert "2 file(s) already known" in out and "read as plain ones named p1..pn" in out and "relabelled" not in out

    (results / "benchmarks.json").write_text(json.dumps(REAL))  # fixed: the same files again
    out = ingest(results, url, capsys)
    assert "ingested 0 file(s) holding 0 result(s); 2 file(s) already known" in out
    assert f"{results / 'benchmarks.json'}: 1 benchmark(s) relabelled from it (first: '{TWO}')" in out
    names, after, alerts = stored(url)
    assert names == ["size", "variant"]
    assert after == {key: {"size": params["p1"], "variant": params["p2"]} for key, params in before.items()}
    assert alerts == {'["1", "a"]': {"size": "1", "variant": "a"}}
    with Session(connect(url)) as session:
        row = session.scalars(select(Benchmark).where(Benchmark.name == TWO)).one()
        assert (row.kind, row.metric, row.unit, row.details) == ("plain", "time", "seconds", {"type": "time"})
        assert session.scalars(select(Benchmark.param_names).where(Benchmark.name == PLAIN)).one() == []

    out = ingest(results, url, capsys)  # again: nothing to do
    assert "2 file(s) already known" in out and "relabelled" not in out and "warning" not in out
    assert stored(url) == (names, after, alerts)

    write(results, "3" * 40)  # a new file: its results under the same names, in the same series
    out = ingest(results, url, capsys)
    assert "ingested 1 file(s) holding 5 result(s); 2 file(s) already known" in out and "relabelled" not in out
    names, third, _ = stored(url)
    assert names == ["size", "variant"] and {tuple(p) for p in third.values()} == {("size", "variant")}
    with Session(connect(url)) as session:
        assert len(session.scalars(select(Benchmark).where(Benchmark.name == TWO)).all()) == 1
        assert len(session.scalars(select(Result)).all()) == 15 and len(session.scalars(select(Commit)).all()) == 3


def test_a_new_file_relabels_the_fallback_row_its_results_go_to(results, db_url, capsys):
    url = db_url
    first = write(results, "1" * 40)
    out = ingest(first, url, capsys)  # no benchmarks.json at all
    assert "not found" in out and stored(url)[0] == ["p1", "p2"]
    (results / "benchmarks.json").write_text(json.dumps(REAL))
    out = ingest(write(results, "2" * 40), url, capsys)  # only the new file
    assert "ingested 1 file(s) holding 5 result(s); 0 file(s) already known" in out
    assert "1 benchmark(s) relabelled" in out
    names, after, _ = stored(url)
    assert names == ["size", "variant"] and len(after) == 8
    with Session(connect(url)) as session:
        assert {tuple(r.params) for r in session.scalars(select(Result).join(Benchmark).where(
            Benchmark.name == TWO))} == {("size", "variant")}

    (results / "benchmarks.json").write_text("{")  # broken again: the stored label stays, and names the new results
    out = ingest(write(results, "3" * 40), url, capsys)
    assert "read as plain ones named p1..pn" in out and "relabelled" not in out
    with Session(connect(url)) as session:
        assert stored(url)[0] == ["size", "variant"]
        assert {tuple(r.params) for r in session.scalars(select(Result).join(Benchmark).where(
            Benchmark.name == TWO))} == {("size", "variant")}


def test_parameters_genuinely_named_p1_p2_by_benchmarks_json_are_left_alone(results, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    track = "bench.Suite.track_two"
    genuine = {"version": 2,
               TWO: {**REAL[TWO], "param_names": ["p1", "p2"]},
               track: {"type": "track", "unit": "items", "version": "v1", "param_names": ["p1", "p2"],
                       "params": [["1", "2"], ["'a'", "'b'"]]}}
    path = write(results, "1" * 40)
    document = json.loads(path.read_text())
    document["results"][track] = document["results"][TWO]
    path.write_text(json.dumps(document))
    (results / "benchmarks.json").write_text(json.dumps(genuine))
    out = ingest(results, url, capsys)
    assert "warning" not in out
    before = {name: stored(url, name) for name in (TWO, track)}
    assert before[TWO][0] == before[track][0] == ["p1", "p2"]

    out = ingest(results, url, capsys)  # the same again: nothing is a fallback
    assert "relabelled" not in out and {name: stored(url, name) for name in (TWO, track)} == before

    genuine[track] = {**genuine[track], "param_names": ["size", "variant"]}  # a later benchmarks.json names them
    (results / "benchmarks.json").write_text(json.dumps(genuine))
    out = ingest(results, url, capsys)
    assert "relabelled" not in out and {name: stored(url, name) for name in (TWO, track)} == before
    with Session(connect(url)) as session:
        row = session.scalars(select(Benchmark).where(Benchmark.name == track)).one()
        assert (row.param_names, row.unit) == (["p1", "p2"], "items")


def test_only_a_fallback_label_is_relabelled_and_only_by_a_matching_entry():
    entry = labels.AsvEntry("time", "seconds", "v1", ("size", "variant"), (("1",), ("'a'",)))
    guessed = labels.plain(TWO, "v1", 2, None)
    assert guessed.param_names == ["p1", "p2"]
    assert labels.relabelled(guessed, TWO, entry) == labels.plain(TWO, "v1", 2, entry)
    assert labels.relabelled(guessed, TWO, None) is None  # nothing better
    assert labels.relabelled(labels.plain(TWO, "v1", 1, None), TWO, entry) is None  # another count
    real = labels.plain(TWO, "v1", 2, entry)
    assert labels.relabelled(real, TWO, labels.AsvEntry("time", "seconds", "v1", ("n", "m"), ((), ()))) is None
    unit = labels.AsvEntry("track", "items", "v1", ("a", "b"), ((), ()))
    numbered_by_asv = labels.plain("m.track_x", "v1", 2, labels.AsvEntry("track", "items", "v1", ("p1", "p2"),
                                                                           ((), ())))
    assert labels.relabelled(numbered_by_asv, "m.track_x", unit) is None  # a real label, not the fallback's unit
    guessed_track = labels.plain("m.track_x", "v1", 2, None)
    assert (guessed_track.unit, labels.relabelled(guessed_track, "m.track_x", unit).unit) == ("unit", "items")
    assert labels.relabelled(guessed_track, "m.track_x", labels.AsvEntry("track", "unit", "v1", ("p1", "p2"),
                                                                         ((), ()))) is None  # the same label
    assert labels.relabelled(labels.plain(PLAIN, "v1", 0, None), PLAIN,
                             labels.AsvEntry("time", "seconds", "v1", (), ())) is None
    assert labels.relabelled(replace(guessed, kind="subject"), TWO, entry) is None
    # another asv version's entry: its parameters may have moved (a version starts a series of its own)
    assert labels.relabelled(labels.plain(TWO, "v0", 2, None), TWO, entry) is None
