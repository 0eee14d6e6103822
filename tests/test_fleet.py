"""The fleet: machines stored by fingerprint, `proofbench machine`, and several machines'
results going into one database (SQLite and a real PostgreSQL server) at the same time.

The results of "other machines" are the real smoke run's results file re-filed under another
machine name and profile, as a fleet member's `proofbench run` would have written them.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pynvml
import pytest
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from conftest import REPO
from postgres import db_url, postgres_server, postgres_url  # noqa: F401  (fixtures)
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session
from test_check import TIME, History
from test_machine import FakeNvml

from proofbench import project
from proofbench.cli import main
from proofbench.db.alerts import Alert
from proofbench.db.fleet import machine_history, store_machine
from proofbench.db.models import Benchmark, Commit, Environment, IngestedFile, Machine, Result
from proofbench.db.session import alembic_config, connect
from proofbench.machine.capture import capture, fingerprint, to_asv_machine_json
from proofbench.pipeline.asv import Layout

pytestmark = pytest.mark.slow
NO_NVML = pynvml.NVML_ERROR_LIBRARY_NOT_FOUND


def command(module, *argv: str) -> int:
    """Run one command module through its own parser, as proofbench.cli does once it is registered."""
    parser = argparse.ArgumentParser()
    module.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def fleet_results(smoke_run, directory: Path, name: str, *, nvml=None, time_scale: float = 1.0,
                  commits: tuple[str, ...] = ()) -> Path:
    """The smoke run's results re-filed as machine `name` (profile from `nvml`, no NVML by default),
    optionally with its times scaled and copied to other commits, each an hour after the one before
    (asv's commit `date`: a copy stands later in commit order than the commit it was copied from,
    whichever of git's dates that one is ordered by); returns the results directory."""
    layout, outcome = smoke_run
    profile = capture(name, nvml=nvml or FakeNvml(init_error=NO_NVML))
    target = replace(layout, results=directory / "results", workdir=directory)
    # written as another machine's proofbench would, whatever the name (this one's refuses names
    # that cannot be file names; results from elsewhere may carry any)
    target.machines.mkdir(parents=True, exist_ok=True)
    (target.machines / f"{name}.json").write_text(json.dumps({"fingerprint": fingerprint(profile),
                                                              **profile.to_dict()}))
    (target.results / name).mkdir(parents=True, exist_ok=True)
    for source in outcome.results:
        data = json.loads(source.read_text())
        data["params"].update(to_asv_machine_json(profile)[name])
        _scale_times(data, time_scale)
        for commit in commits or (data["commit_hash"],):
            data["commit_hash"] = commit
            if commits:
                data["date"] += 3_600_000
            (target.results / name / f"{commit[:8]}-{data['env_name']}.json").write_text(json.dumps(data))
    return target.results


def machines(*results: Path) -> list[str]:
    """`--machines DIR` for each results directory `fleet_results` made (its profiles lie beside it)."""
    return [arg for path in results for arg in ("--machines", str(path.parent / "machines"))]


def _scale_times(data: dict, factor: float) -> None:
    columns = data["result_columns"]
    for name, row in data["results"].items():
        if not name.endswith(".time_call"):
            continue
        cells = dict(zip(columns, row))
        cells["result"] = [_times(v, factor) for v in cells["result"]]
        if cells.get("samples"):
            cells["samples"] = [[_times(s, factor) for s in samples] if samples else samples
                                for samples in cells["samples"]]
        data["results"][name] = [cells[c] for c in columns[:len(row)]]


def _times(value, factor: float):
    return value * factor if isinstance(value, float) and not math.isnan(value) else value


def _count(session: Session, model) -> int:
    return session.scalar(select(func.count()).select_from(model))


# --- machines by fingerprint -----------------------------------------------------------

def test_same_fingerprint_is_the_same_row_and_a_new_one_links_to_it(db_url):
    engine = connect(db_url)
    with Session(engine, expire_on_commit=False) as session, session.begin():
        first = store_machine(session, "box", "a" * 16, {"cpu_model": "A"})
        again = store_machine(session, "box", "a" * 16, {"cpu_model": "A, read again"})
        other_name = store_machine(session, "other", "a" * 16, {})
        changed = store_machine(session, "box", "b" * 16, {"cpu_model": "B"})
        back = store_machine(session, "box", "a" * 16, {"cpu_model": "A"})
    assert again.id == first.id == back.id and first.profile == {"cpu_model": "A"}
    assert other_name.id != first.id and other_name.previous_id is None
    assert changed.id != first.id and changed.previous_id == first.id
    with Session(engine) as session:
        assert [m.fingerprint for m in machine_history(session, "box")] == ["a" * 16, "b" * 16]


def test_machine_command_without_nvml_says_so_and_stores_once(db_url, tmp_project, monkeypatch, capsys):
    layout = Layout.of(project.load(tmp_project / "proofbench.toml"))
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(init_error=NO_NVML))
    assert command(_machine_module(), "machine", "--name", "ci-box", "--db", db_url, "--project", str(tmp_project)) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["name"] == "ci-box" and printed["gpus"] == []
    assert printed["gpu_note"] == "NVML not available: NVML Shared Library Not Found"
    asv_file = json.loads((layout.home / ".asv-machine.json").read_text())
    assert asv_file["ci-box"]["gpu"] == "none"
    assert asv_file["ci-box"]["proofbench_fingerprint"] == printed["fingerprint"]
    assert json.loads((layout.machines / "ci-box.json").read_text()) == printed
    assert command(_machine_module(), "machine", "--name", "ci-box", "--db", db_url, "--project", str(tmp_project)) == 0
    assert "already stored" in capsys.readouterr().err
    with Session(connect(db_url)) as session:
        (row,) = machine_history(session, "ci-box")
        assert row.profile == printed and row.fingerprint == printed["fingerprint"]


def test_machine_command_files_new_hardware_as_a_new_linked_row(db_url, tmp_project, monkeypatch, capsys):
    layout = Layout.of(project.load(tmp_project / "proofbench.toml"))
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(init_error=NO_NVML))
    command(_machine_module(), "machine", "--name", "box", "--db", db_url, "--project", str(tmp_project))
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())  # an H100 was fitted (fixture values)
    command(_machine_module(), "machine", "--name", "box", "--db", db_url, "--project", str(tmp_project))
    out = capsys.readouterr()
    cpu_profile, gpu_profile = _documents(out.out)
    assert cpu_profile["gpus"] == [] and cpu_profile["gpu_note"].startswith("NVML not available")
    assert gpu_profile["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and gpu_profile["gpu_note"] is None
    assert "replacing row" in out.err
    with Session(connect(db_url)) as session:
        old, new = machine_history(session, "box")
        assert new.previous_id == old.id and new.fingerprint == gpu_profile["fingerprint"] != old.fingerprint
    assert json.loads((layout.home / ".asv-machine.json").read_text())["box"]["gpu"] == "NVIDIA H100 80GB HBM3"


def test_machine_command_stops_before_writing_when_the_database_is_unreachable(tmp_project):
    from proofbench.errors import DatabaseError

    layout = Layout.of(project.load(tmp_project / "proofbench.toml"))
    with pytest.raises(DatabaseError, match=r"cannot reach database postgresql\+psycopg://u:\*\*\*@127.0.0.1:1/x"):
        command(_machine_module(), "machine", "--db", "postgresql+psycopg://u:pw@127.0.0.1:1/x", "--project",
                str(tmp_project))
    assert not layout.home.exists() and not layout.machines.exists()


def _documents(text: str) -> list[dict]:
    decoder, out, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        document, end = decoder.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
        out.append(document)
        at = end
    return out


def _machine_module():
    from proofbench.cli import machine

    return machine


def test_ingest_stores_the_profile_machine_command_would(smoke_run, tmp_path, sqlite_url):
    # `proofbench machine` and `proofbench ingest` file the same hardware under the same row.
    directory = fleet_results(smoke_run, tmp_path, "same-box")
    profile = json.loads((directory.parent / "machines" / "same-box.json").read_text())
    engine = connect(sqlite_url)
    with Session(engine, expire_on_commit=False) as session, session.begin():
        stored = store_machine(session, "same-box", profile["fingerprint"], profile)
    assert main(["ingest", str(directory), "--sidecar", str(smoke_run[0].sidecar), *machines(directory), "--db",
                 sqlite_url]) == 0
    with Session(engine) as session:
        assert session.scalars(select(Machine)).one().id == stored.id
        assert session.scalar(select(func.count(Result.id)).where(Result.machine_id == stored.id)) > 0


# --- one database, several writers ----------------------------------------------------

_WORKER = """
import sys, time, pathlib
from proofbench.db.session import connect
from proofbench import project
from proofbench.catalogue import load_catalogue
connect(sys.argv[-1])  # the schema exists (the --db URL is the last argument)
load_catalogue(project.find())  # and the slow imports are done before the gate, so the ingests overlap
print("ready", flush=True)
gate = pathlib.Path(sys.argv[1])
while not gate.exists():
    time.sleep(0.002)
from proofbench.cli import main
sys.exit(main(sys.argv[2:]))
"""
_GATED = """
import sys, time, pathlib
print("ready", flush=True)
gate = pathlib.Path(sys.argv[1])
while not gate.exists():
    time.sleep(0.002)
from proofbench.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _at_once(worker: str, gate: Path, commands: list[list[str]]) -> list[tuple[int, str]]:
    # Each process prepares, says "ready" and waits for the gate; then all go at the same moment.
    procs = [subprocess.Popen([sys.executable, "-c", worker, str(gate), *argv], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for argv in commands]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    gate.touch()
    return [(proc.wait(timeout=300), proc.stderr.read()) for proc in procs]


def test_four_processes_creating_the_schema_at_once(db_url, tmp_path):
    outcomes = _at_once(_GATED, tmp_path / "gate", [["db", "upgrade", "--db", db_url]] * 4)
    assert [rc for rc, _ in outcomes] == [0] * 4, "\n".join(err for _, err in outcomes)
    engine = connect(db_url, migrate=False)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
        assert MigrationContext.configure(connection).get_current_revision() == _head(engine)
    with Session(engine) as session:
        assert _count(session, Machine) == 0  # the tables are there, and empty


def test_two_machines_checking_one_database_at_once_raise_each_alert_once(db_url, tmp_path):
    """A fleet's machines each run their nightly check on the shared database. Two at once on
    PostgreSQL both raised the same new alert, and one failed on the alerts' unique key (exit 3,
    "a bug in proofbench"); one now waits for the other, as on SQLite."""
    h = History(db_url)
    h.nights(0, 10, {TIME: 1.0e-3})
    h.nights(10, 20, {TIME: 1.3e-3})
    check = ["check", "--no-git", "--no-confirm", "--format", "json", "--db", db_url]
    outcomes = _at_once(_GATED, tmp_path / "gate", [check, check])
    assert sorted(rc for rc, _ in outcomes) == [0, 1], "\n".join(err for _, err in outcomes)  # new, then open
    with Session(connect(db_url)) as session:
        assert session.scalar(select(func.count()).select_from(Alert)) == 1


def test_a_check_that_waited_too_long_for_its_turn_on_sqlite_says_why(tmp_path, monkeypatch, capsys):
    # another process holds the writer lock (a check measuring again holds it for minutes)
    import sqlite3

    from proofbench.db import session as db_session

    url = f"sqlite:///{tmp_path / 'busy.sqlite'}"
    History(url).nights(0, 6, {TIME: 1.0e-3})
    monkeypatch.setattr(db_session, "BUSY_TIMEOUT_MS", 1000)
    holder = sqlite3.connect(tmp_path / "busy.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert main(["check", "--no-git", "--no-confirm", "--db", url]) == 2
        line = capsys.readouterr().err.strip()
        # commands that only read do so beside the writer (they waited 30 s for it, then failed)
        assert main(["alerts", "list", "--db", url]) == 0
        assert main(["check", "--no-git", "--no-confirm", "--no-record", "--db", url]) == 0
        assert main(["report", "--out", str(tmp_path / "site"), "--db", url]) == 0
        assert (tmp_path / "site" / "index.html").is_file()
    finally:
        holder.close()
    assert "\n" not in line and line.endswith("database is locked (another process held it past the 1 s proofbench "
                                              "waits: a check or a bisection holds it while it measures; run again "
                                              "when that is done)"), line


def _head(engine) -> str:
    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def test_four_machines_ingesting_at_once_lose_nothing_and_duplicate_nothing(db_url, smoke_run, tmp_path):
    layout, outcome = smoke_run
    commit = json.loads(outcome.results[0].read_text())["commit_hash"]
    commits = (commit, "1" * 40, "2" * 40)  # each machine has results at three commits
    directories = [fleet_results(smoke_run, tmp_path / f"m{i}", f"fleet-{i}", commits=commits) for i in range(4)]
    outcomes = _at_once(_WORKER, tmp_path / "gate", [["ingest", str(d), "--sidecar", str(layout.sidecar), *machines(d),
                                                      "--db", db_url] for d in directories])
    assert [rc for rc, _ in outcomes] == [0] * 4, "\n".join(err for _, err in outcomes)
    points = sum(len(row[1][0]) * len(row[1][1]) for path in outcome.results
                 for row in json.loads(path.read_text())["results"].values())
    names = {name for path in outcome.results for name in json.loads(path.read_text())["results"]}
    with Session(connect(db_url)) as session:
        assert sorted(session.scalars(select(Machine.name))) == [f"fleet-{i}" for i in range(4)]
        assert sorted(session.scalars(select(Commit.hash))) == sorted(commits)
        assert _count(session, Environment) == 1
        assert sorted(session.scalars(select(Benchmark.name))) == sorted(names)
        assert _count(session, IngestedFile) == 4 * len(commits) * len(outcome.results)
        assert _count(session, Result) == 4 * len(commits) * points
        per_machine = session.execute(select(Result.machine_id, func.count()).group_by(Result.machine_id)).all()
        assert sorted(n for _, n in per_machine) == [len(commits) * points] * 4


def test_ingest_check_and_report_on_each_database(db_url, smoke_run, tmp_path, capsys):
    from proofbench.cli import check

    layout, _ = smoke_run
    cpu = fleet_results(smoke_run, tmp_path / "cpu", "cpu-box")
    gpu = fleet_results(smoke_run, tmp_path / "gpu", "gpu-box", nvml=FakeNvml())
    sidecar = str(layout.sidecar)
    assert main(["ingest", str(cpu), str(gpu), "--sidecar", sidecar, *machines(cpu, gpu), "--db", db_url]) == 0
    assert main(["ingest", str(cpu), "--sidecar", sidecar, *machines(cpu), "--db", db_url]) == 0  # again: nothing new
    capsys.readouterr()
    # one commit: nothing to regress (ordered by its results' date: the checkout's HEAD need not be on main)
    assert command(check, "check", "--format", "json", "--no-git", "--db", db_url) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["status"] == "ok" and checked["counts"]["series"] > 0 and checked["check"]["recorded"]
    engine = connect(db_url)
    assert main(["report", "--out", str(tmp_path / "site"), "--db", db_url]) == 0
    html = (tmp_path / "site" / "index.html").read_text()
    assert "cpu-box" in html and "gpu-box" in html and "loading.lmdb_read" in html
    with Session(engine) as session:
        profiles = {m.name: m.profile for m in session.scalars(select(Machine))}
    assert profiles["gpu-box"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert profiles["cpu-box"]["gpus"] == [] and profiles["cpu-box"]["gpu_note"].startswith("NVML not available")


# --- one machine, commit and environment from several writers; what the columns hold ------

def test_four_processes_ingesting_the_same_machine_commit_and_environment_at_once(db_url, tmp_path):
    # Each process has its own file of the same commit (asv rewrote it between copies), so none is
    # "already known" and all four write the same result rows at the same moment.
    from test_hostile_results import FIRST, POINTS, document

    directories = []
    for i in range(4):
        doc = document(FIRST)
        doc["results"]["bench.time_plain"][0] = [0.5 + i / 100]
        where = tmp_path / f"copy-{i}" / "box"
        where.mkdir(parents=True)
        (where / f"{FIRST[:8]}-virtualenv-py3.11.json").write_text(json.dumps(doc))
        directories.append(where.parent)
    outcomes = _at_once(_GATED, tmp_path / "gate", [["ingest", str(d), "--db", db_url] for d in directories])
    assert [rc for rc, _ in outcomes] == [0] * 4, "\n".join(err for _, err in outcomes)
    with Session(connect(db_url)) as session:
        assert (_count(session, Machine), _count(session, Commit), _count(session, Environment)) == (1, 1, 1)
        assert _count(session, IngestedFile) == 4 and _count(session, Result) == POINTS
        value = session.scalar(select(Result.value).join(Benchmark).where(Benchmark.name == "bench.time_plain"))
        assert value in (0.5, 0.51, 0.52, 0.53)  # one writer's, whole


def test_a_file_another_process_stores_first_counts_as_already_known(db_url, tmp_path, monkeypatch, capsys):
    # Deterministically, the race two fleet ingests of overlapping directories run: the other
    # process stores a file after this one found it new and before this one writes it. The unique
    # hash refuses the second row, and this ingest counts the file as already known, not as its own.
    from test_hostile_results import ENV, FIRST, LAST, POINTS, document

    from proofbench.pipeline import results_file

    machine_dir = tmp_path / "results" / "box"
    machine_dir.mkdir(parents=True)
    raced, alone = machine_dir / f"{FIRST[:8]}-{ENV}.json", machine_dir / f"{LAST[:8]}-{ENV}.json"
    raced.write_text(json.dumps(document(FIRST)))
    alone.write_text(json.dumps(document(LAST)))
    assert main(["db", "upgrade", "--db", db_url]) == 0
    parse, other = results_file.parse, {}

    def parse_then_lose_the_race(path: Path, data: bytes):
        parsed = parse(path, data)
        if path == raced and "code" not in other:  # once: the other process's own parse comes back here
            other["code"] = None
            other["code"] = main(["ingest", str(raced), "--db", db_url])
        return parsed

    monkeypatch.setattr(results_file, "parse", parse_then_lose_the_race)
    capsys.readouterr()
    assert main(["ingest", str(tmp_path / "results"), "--db", db_url]) == 0
    assert other == {"code": 0}
    lines = [line for line in capsys.readouterr().err.splitlines() if "warning" not in line]  # no benchmarks.json
    said = f"ingested 1 file(s) holding {POINTS} result(s); {{}} file(s) already known"
    assert lines[0].endswith(said.format(0)), lines  # the other's
    assert lines[1].endswith(said.format(1)), lines  # this one's
    with Session(connect(db_url)) as session:
        files = {path: (id_, n) for id_, path, n in session.execute(select(IngestedFile.id, IngestedFile.path,
                                                                            IngestedFile.results))}
        assert {path: n for path, (_, n) in files.items()} == {str(raced): POINTS, str(alone): POINTS}
        owners = {(r.commit.hash, r.file_id) for r in session.scalars(select(Result))}
        assert owners == {(FIRST, files[str(raced)][0]), (LAST, files[str(alone)][0])}
        assert _count(session, Result) == 2 * POINTS


def test_every_column_holds_the_largest_values_the_reader_accepts(db_url, tmp_path):
    from test_hostile_results import document

    from proofbench.pipeline import results_file

    limits = results_file.LIMITS
    commit = "e" * 64  # a SHA-256 repository's hash
    doc = document(commit, machine="é" * limits["machine"])
    name = "b" * (limits["benchmark"] - len(".time_x")) + ".time_x"
    # the key (the values as JSON, non-ASCII escaped) near its limit, the longest value at its own
    value, other = "'" + "a" * (results_file.MAX_PARAM - 2) + "'", "'" + "ü" + "b" * 970 + "'"
    doc["results"] = {name: [[1.0, 2.0], [[value, "'x'"], [other]], "v" * limits["version"]]}
    doc.update(env_name="n" * limits["env_name"], python="/" + "p" * (limits["python"] - 1),
               requirements={"ü" * 300: "1.0"})
    results = tmp_path / "results"
    (results / "box").mkdir(parents=True)
    (results / "box" / "long.json").write_text(json.dumps(doc, ensure_ascii=False))
    (results / "benchmarks.json").write_text(json.dumps({name: {
        "type": "track", "unit": "u" * 100, "version": "v" * limits["version"], "param_names": ["n" * 100, "m"],
        "params": [[value, "'x'"], [other]]}, "version": 2}))
    assert main(["ingest", str(results), "--db", db_url]) == 0
    with Session(connect(db_url)) as session:
        bench = session.scalars(select(Benchmark)).one()
        assert (bench.name, bench.unit, bench.param_names) == (name, "u" * 100, ["n" * 100, "m"])
        row = session.scalars(select(Result).where(Result.value == 1.0)).one()
        assert row.params == {"n" * 100: value[1:-1], "m": other[1:-1]}
        assert 1900 < len(row.params_key) <= results_file.MAX_PARAMS_KEY
        assert (row.machine.name, row.commit.hash, row.environment.name) == (doc["params"]["machine"], commit,
                                                                             doc["env_name"])
