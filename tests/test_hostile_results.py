"""Broken and hostile results files: each is refused in one line naming the file, the benchmark
and the field, the files after it still go in, and nothing stored changes because of it.

Every case is a results directory with two good files (one ingested before, one after the bad
file in name order) and one bad file made from a good one; `proofbench ingest` runs through
the real entry point (the one place exceptions become exit codes), in this process.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from conftest import REPO, make_project
from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.cli import main
from proofbench.db.models import Benchmark, Commit, Environment, IngestedFile, Machine, Result
from proofbench.db.session import connect
from proofbench.errors import InputError
from proofbench.pipeline import results_file

FIRST, LAST, BAD = "1" * 40, "f" * 40, "c" * 40
ENV = "virtualenv-py3.11"
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
OWN = "loading.LmdbRead.time_call"  # a benchmark the suite's labels describe (variant, size)
POINTS = 2 + 1 + 4


def document(commit: str, machine: str = "box") -> dict:
    """A results file as asv 0.6 writes it: a parametrized plain benchmark, a plain one without
    parameters, and one of proofbench's own."""
    return {"commit_hash": commit, "env_name": ENV, "date": 1719663898000,
            "params": {"machine": machine, "python": "3.11", "cpu": "test CPU"}, "python": "3.11",
            "requirements": {"numpy": ""}, "env_vars": {}, "result_columns": COLUMNS,
            "results": {"bench.Suite.time_one": [[1e-3, 2e-3], [["1", "2"]], "v1", 1719664057275, 1.5,
                                                 [-float("inf"), -float("inf")], [float("inf"), float("inf")]],
                        "bench.time_plain": [[0.5], [], "v1", 1719664057275, 1.0, None, None, None, None, [3]],
                        OWN: [[1e-3, 2e-3, 3e-3, 4e-3], [["'baseline'", "'optimized'"], ["'tiny'", "'small'"]],
                              "w1", 1719664057275, 2.0]},
            "durations": {}, "version": 2}


def dumped(doc: dict) -> str:
    return json.dumps(doc)


def _edited(edit: Callable[[dict], object]) -> Callable[[], str]:
    def make() -> str:
        doc = document(BAD)
        edit(doc)
        return dumped(doc)
    return make


def _row(name: str, value) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        doc["results"][name] = value
    return edit


def _set(path: tuple, value) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


def _text_replaced(old: str, new: str) -> Callable[[], str]:
    return lambda: dumped(document(BAD)).replace(old, new, 1)


@dataclass(frozen=True)
class Case:
    """One bad file: how to make its content, and what its refusal must say."""

    id: str
    content: Callable[[], str | bytes] | None
    expected: tuple[str, ...]
    special: str = ""  # symlink-loop, dangling, directory, fifo: not a regular file at all


CASES = [
    Case("invalid-utf8", lambda: dumped(document(BAD)).encode().replace(b"test CPU", b"test \xff\xfe CPU"),
         ("not UTF-8 text",)),
    Case("nested-100k-deep", lambda: "[" * 100_000 + "]" * 100_000, ("nested too deeply",)),
    Case("400-digit-result", _text_replaced("0.001, 0.002", "1" * 400 + ", 0.002"),
         ("'bench.Suite.time_one'", "result[0]", "inf is not a valid measurement")),
    Case("5000-digit-result", _text_replaced("0.001, 0.002", "9" * 5000 + ", 0.002"),
         ("'bench.Suite.time_one'", "result[0]")),
    Case("5000-digit-stats-number", _text_replaced("[3]", "[" + "7" * 5000 + "]"),
         ("'bench.time_plain'", "stats_number[0]")),
    Case("stats-number-too-big-for-its-column", _text_replaced("[3]", "[4294967296]"),
         ("'bench.time_plain'", "stats_number[0]", "2147483647")),
    Case("started-at-1e20", _text_replaced("1719664057275", "1e20"), ("'bench.Suite.time_one'", "started_at")),
    Case("started-at-nan", _text_replaced("1719664057275", "NaN"), ("'bench.Suite.time_one'", "started_at")),
    Case("started-at-minus-1e14", _text_replaced("1719664057275", "-1e14"), ("'bench.Suite.time_one'", "started_at")),
    Case("date-1e20", _edited(_set(("date",), 1e20)), ("date",)),
    Case("parameters-explode", _edited(_row("bench.Suite.time_one", [None, [[str(i) for i in range(60)]] * 6, "v1"])),
         ("'bench.Suite.time_one'", "params", "46656000000 parameter combinations")),
    Case("values-fewer-than-combinations", _edited(_row("bench.Suite.time_one", [[1.0], [["1", "2"], ["3"]], "v1"])),
         ("'bench.Suite.time_one'", "result", "1 value(s) for 2 parameter combination(s)")),
    Case("200k-character-parameter",
         _edited(_row("bench.Suite.time_one", [[1.0], [["'" + "x" * 200_000 + "'"]], "v1"])),
         ("'bench.Suite.time_one'", "params[0]", "200002 characters")),
    Case("commit-hash-int", _edited(_set(("commit_hash",), 12345678)), ("commit_hash", "got int")),
    Case("commit-hash-dict", _edited(_set(("commit_hash",), {"a": 1})), ("commit_hash", "got dict")),
    Case("commit-hash-10k-characters", _edited(_set(("commit_hash",), "a" * 10_000)),
         ("commit_hash", "not a commit hash")),
    Case("commit-hash-option", _edited(_set(("commit_hash",), "--output=/tmp/x")),
         ("commit_hash", "not a commit hash")),
    Case("env-name-list", _edited(_set(("env_name",), ["a", "b"])), ("env_name", "got list")),
    Case("env-name-nul", _edited(_set(("env_name",), "env\x00name")), ("env_name", "control character")),
    Case("machine-name-dict", _edited(_set(("params", "machine"), {"name": "box"})), ("params.machine", "got dict")),
    Case("machine-name-201-characters", _edited(_set(("params", "machine"), "m" * 201)),
         ("params.machine", "201 characters")),
    Case("machine-name-nul", _edited(_set(("params", "machine"), "bo\x00x")), ("params.machine", "NUL")),
    Case("machine-name-lone-surrogate", _text_replaced('"machine": "box"', '"machine": "bo\\ud800x"'),
         ("params.machine", "surrogate")),
    Case("top-level-params-list", _edited(_set(("params",), ["box"])), ("params", "expected an object")),
    Case("requirements-nul", _edited(_set(("requirements",), {"numpy": "1\x00"})), ("requirements", "NUL")),
    Case("integer-parameter-values", _edited(_row("bench.Suite.time_one", [[1.0, 2.0], [[1, 2]], "v1"])),
         ("'bench.Suite.time_one'", "params[0]", "got int")),
    Case("parameter-nul", _edited(_row("bench.Suite.time_one", [[1.0], [["'a\x00'"]], "v1"])),
         ("'bench.Suite.time_one'", "params[0]", "NUL")),
    Case("parameters-that-read-the-same", _edited(_row("bench.Suite.time_one", [[1.0, 2.0], [["1", "'1'"]], "v1"])),
         ("'bench.Suite.time_one'", "params", "read the same")),
    Case("row-truncated-to-two-fields", _edited(_row("bench.Suite.time_one", [[1.0, 2.0], [["1", "2"]]])),
         ("'bench.Suite.time_one'", "version", "missing: the row has 2 of 13 fields")),
    Case("empty-row", _edited(_row("bench.Suite.time_one", [])), ("'bench.Suite.time_one'", "result", "missing")),
    Case("row-longer-than-its-columns", _edited(_row("bench.Suite.time_one", [None] * 14)),
         ("'bench.Suite.time_one'", "row", "14 fields for 13")),
    Case("version-empty", _edited(_row("bench.Suite.time_one", [[1.0, 2.0], [["1", "2"]], ""])),
         ("'bench.Suite.time_one'", "version", "non-empty")),
    Case("one-parameter-list-for-a-labelled-benchmark", _edited(_row(OWN, [None, [["'baseline'"]], "w1"])),
         (f"'{OWN}'", "params", "1 parameter list(s), its label names 2 (variant, size)")),
    Case("three-parameter-lists-for-a-labelled-benchmark",
         _edited(_row(OWN, [None, [["'baseline'"], ["'tiny'"], ["'x'"]], "w1"])),
         (f"'{OWN}'", "params", "3 parameter list(s)")),
    Case("benchmark-twice", _text_replaced('"bench.time_plain"', '"bench.Suite.time_one": [], "bench.time_plain"'),
         ("key 'bench.Suite.time_one' appears twice",)),
    Case("commit-hash-twice", _text_replaced('"env_name"', f'"commit_hash": "{"d" * 40}", "env_name"'),
         ("key 'commit_hash' appears twice",)),
    Case("benchmark-name-newline", _edited(_row("bench.evil\nname", [[1.0], [], "v1"])),
         ("results", "control character")),
    Case("nan-raw-sample", _edited(_row("bench.Suite.time_one", [[1.0, 2.0], [["1", "2"]], "v1", None, None, None,
                                                                 None, None, None, None, None,
                                                                 [[1.0, float("nan")], [2.0]]])),
         ("'bench.Suite.time_one'", "samples[0] raw sample", "nan is not a valid measurement")),
    Case("infinite-result", _edited(_row("bench.Suite.time_one", [[float("inf"), 1.0], [["1", "2"]], "v1"])),
         ("'bench.Suite.time_one'", "result[0]", "inf")),
    Case("result-1e308", _edited(_row("bench.Suite.time_one", [[1e308, 1.0], [["1", "2"]], "v1"])),
         ("'bench.Suite.time_one'", "result[0]", "1e+308 is not a measurement")),
    Case("sample-minus-1e308", _edited(_row("bench.Suite.time_one", [[1.0, 2.0], [["1", "2"]], "v1", None, None, None,
                                                                     None, None, None, None, None,
                                                                     [[1.0, -1e308], [2.0]]])),
         ("'bench.Suite.time_one'", "samples[0] raw sample", "-1e+308")),
    Case("negative-duration", _edited(_row("bench.Suite.time_one", [[1.0, 2.0], [["1", "2"]], "v1", None, -1.0])),
         ("'bench.Suite.time_one'", "duration", "negative")),
    Case("results-a-list", _edited(_set(("results",), [])), ("results", "expected an object")),
    Case("format-version-3", _edited(_set(("version",), 3)), ("format version '3' is not supported",)),
    Case("format-1-without-its-keys", lambda: json.dumps({"version": 1, "results": {}}),
         ("format 1 file that asv's converter cannot read",)),
    Case("not-an-object", lambda: "[1, 2, 3]", ("expected a JSON object",)),
    Case("truncated", lambda: dumped(document(BAD))[:300], ("not valid JSON",)),
    Case("symlink-loop", None, ("cannot read", "symbolic links"), special="loop"),
    Case("dangling-symlink", None, ("cannot read", "No such file"), special="dangling"),
    Case("directory-named-json", None, ("not a regular file (a directory)",), special="directory"),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose suite has proofbench's own labels (so `OWN` is a subject's benchmark)."""
    root = make_project(tmp_path / "project")
    (root / "benchmarks").mkdir()
    shutil.copy(REPO / "benchmarks" / "proofbench.json", root / "benchmarks" / "proofbench.json")
    return root


def _state(url: str) -> dict:
    engine = connect(url)
    with Session(engine) as session:
        return {"commits": set(session.scalars(select(Commit.hash))),
                "machines": set(session.scalars(select(Machine.name))),
                "environments": set(session.scalars(select(Environment.name))),
                "benchmarks": set(session.scalars(select(Benchmark.name))),
                "files": len(session.scalars(select(IngestedFile.id)).all()),
                "results": sorted((r.commit.hash, r.benchmark.name, r.params_key, r.status, r.value)
                                  for r in session.scalars(select(Result)))}


def _make_bad(case: Case, machine_dir: Path) -> Path:
    bad = machine_dir / f"{BAD[:8]}-{case.id}.json"
    if case.special == "loop":
        os.symlink(bad.name, bad)
    elif case.special == "dangling":
        os.symlink("no-such-target.json", bad)
    elif case.special == "directory":
        bad.mkdir()
    else:
        content = case.content()
        bad.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return bad


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_file_is_refused_in_one_line_and_changes_nothing(case, project, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    machine_dir = tmp_path / "results" / "box"
    machine_dir.mkdir(parents=True)
    first, last = machine_dir / f"{FIRST[:8]}-{ENV}.json", machine_dir / f"{LAST[:8]}-{ENV}.json"
    first.write_text(dumped(document(FIRST)))
    last.write_text(dumped(document(LAST)))
    assert main(["ingest", str(first), "--db", url, "--project", str(project)]) == 0
    before = _state(url)
    bad = _make_bad(case, machine_dir)
    capsys.readouterr()
    code = main(["ingest", str(tmp_path / "results"), "--db", url, "--project", str(project)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and "Traceback" not in err
    refused = [line for line in err.splitlines() if line.startswith("proofbench: refused ")]
    assert len(refused) == 1 and refused[0].startswith(f"proofbench: refused {bad}: "), err
    assert all(part in refused[0] for part in case.expected), refused[0]
    after = _state(url)
    assert after["commits"] == {FIRST, LAST} and after["machines"] == before["machines"] == {"box"}
    assert after["environments"] == {ENV} and after["benchmarks"] == before["benchmarks"]
    assert after["files"] == 2 and len(after["results"]) == 2 * POINTS
    assert [r for r in after["results"] if r[0] == FIRST] == before["results"]


def test_a_fifo_named_like_a_results_file_is_refused_without_waiting(project, tmp_path):
    machine_dir = tmp_path / "results" / "box"
    machine_dir.mkdir(parents=True)
    (machine_dir / f"{LAST[:8]}-{ENV}.json").write_text(dumped(document(LAST)))
    fifo = machine_dir / f"{FIRST[:8]}-{ENV}.json"
    os.mkfifo(fifo)
    out = subprocess.run([sys.executable, "-m", "proofbench", "ingest", str(tmp_path / "results"), "--db",
                          f"sqlite:///{tmp_path / 'db.sqlite'}", "--project", str(project)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"proofbench: refused {fifo}: not a regular file (a pipe)" in out.stderr
    assert "ingested 1 file(s) holding 7 result(s)" in out.stderr


@pytest.mark.parametrize("profile, expected", [
    ("[1, 2]", "expected a JSON object (a machine profile)"),
    ('{"fingerprint": {"a": 1}}', "fingerprint: expected a string"),
    ('{"fingerprint": "abc", "cpu_model": "x\\u0000"}', "NUL"),
    ("{not json", "not valid JSON"),
], ids=["a-list", "fingerprint-a-dict", "nul-in-profile", "not-json"])
def test_a_bad_machine_profile_refuses_only_its_machines_files(profile, expected, project, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    results, profiles = tmp_path / "results", tmp_path / "machines"
    profiles.mkdir()
    for machine in ("box", "other"):
        (results / machine).mkdir(parents=True)
        (results / machine / f"{FIRST[:8]}-{ENV}.json").write_text(dumped(document(FIRST, machine)))
    (profiles / "box.json").write_text(profile)
    (profiles / "other.json").write_text(json.dumps({"fingerprint": "0123456789abcdef", "cpu_model": "Other CPU"}))
    code = main(["ingest", str(results), "--machines", str(profiles), "--db", url, "--project", str(project)])
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("proofbench: refused ")]
    assert str(results / "box") in line and "machine 'box': its profile is unusable" in line
    assert str(profiles / "box.json") in line and expected in line
    engine = connect(url)
    with Session(engine) as session:
        machine = session.scalars(select(Machine)).one()
        assert (machine.name, machine.fingerprint, machine.profile["cpu_model"]) == ("other", "0123456789abcdef",
                                                                                    "Other CPU")


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(" " * 100)
    with pytest.raises(InputError, match="larger than 0 MiB"):
        results_file.load_bytes(path, limit=50)


def test_asvs_statistics_columns_may_hold_infinities(project, tmp_path, capsys):
    # conda's published results carry -Infinity in asv's own stats_ci_99_a: never a reason to refuse
    path = tmp_path / "results" / "box" / f"{FIRST[:8]}-{ENV}.json"
    path.parent.mkdir(parents=True)
    path.write_text(dumped(document(FIRST)))
    assert "-Infinity" in path.read_text()
    assert main(["ingest", str(path), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}", "--project", str(project)]) == 0
    assert "ingested 1 file(s) holding 7 result(s)" in capsys.readouterr().err


def test_a_file_whose_name_is_not_utf8_goes_in(project, tmp_path, capsys):
    machine_dir = tmp_path / "results" / "box"
    machine_dir.mkdir(parents=True)
    name = os.fsdecode(b"1111\xff\xfe-env.json")  # undecodable bytes, as surrogates
    (machine_dir / name).write_text(dumped(document(FIRST)))
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["ingest", str(tmp_path / "results"), "--db", url, "--project", str(project)]) == 0
    with Session(connect(url)) as session:
        (stored,) = session.scalars(select(IngestedFile.path))
    assert stored.endswith("1111\\udcff\\udcfe-env.json")


# --- timings that are none; options that mean nothing

def test_a_missing_benchmarks_json_is_said_only_where_a_plain_benchmark_needs_it(project, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    own, plain = document(FIRST), document(LAST)
    own["results"] = {OWN: own["results"][OWN]}  # the suite's labels describe it: benchmarks.json is not read
    for doc in (own, plain):
        path = tmp_path / "results" / "box" / f"{doc['commit_hash'][:8]}-{ENV}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumped(doc))
        assert main(["ingest", str(path), "--db", url, "--project", str(project)]) == 0
        warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
        if doc is own:
            assert warnings == []
        else:  # one line, naming where asv would have written it
            assert warnings == [f"proofbench: warning: {tmp_path / 'results' / 'benchmarks.json'}: not found (asv "
                                f"writes it beside the machines' results directories); its results' benchmarks "
                                f"are read from their names, parameters named p1..pn"]


def test_timings_at_or_below_zero_are_stored_as_failed_with_why(project, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    path = tmp_path / "results" / "box" / f"{FIRST[:8]}-{ENV}.json"
    path.parent.mkdir(parents=True)
    doc = document(FIRST)
    doc["results"]["bench.Suite.time_one"][0] = [-1.5e-06, 2e-3]
    doc["results"]["bench.time_plain"][0] = [0.0]
    doc["results"][OWN][0][1] = -2e-3  # the suite's own timing (optimized, tiny)
    doc["results"]["bench.track_delta"] = [[-3.0, 0.0], [["1", "2"]], "v1"]  # a track may be zero or below
    doc["results"]["bench.Suite.time_sampled"] = [[1e-3], [], "v1", None, None, None, None, None, None, None, None,
                                                  [[1e-3, -1e-4, 2e-3]]]
    path.write_text(dumped(doc))
    assert main(["ingest", str(path), "--db", url, "--project", str(project)]) == 0
    err = capsys.readouterr().err
    assert f"ingested 1 file(s) holding {POINTS + 3} result(s); 0 file(s) already known" in err
    (missing, warning) = [line for line in err.splitlines() if line.startswith("proofbench: warning: ")]
    assert f"{path}: 4 timing(s) at or below zero stored as failed" in warning
    # no benchmarks.json beside the machine's directory: said once, the plain benchmarks read from their names
    assert missing.startswith(f"proofbench: warning: {tmp_path / 'results' / 'benchmarks.json'}: not found"), missing
    assert "'bench.Suite.time_one'" in warning and "time -1.5e-06 s is not a measurement" in warning
    with Session(connect(url)) as session:
        stored = {(r.benchmark.name, r.params_key): r for r in session.scalars(select(Result))}
    failed = {key: (r.value, r.samples, r.reason) for key, r in stored.items() if r.status == "failed"}
    why = "s is not a measurement (a time must be above zero)"
    assert failed == {("bench.Suite.time_one", '["1"]'): (None, None, f"time -1.5e-06 {why}"),
                      ("bench.time_plain", "[]"): (None, None, f"time 0 {why}"),
                      (OWN, '["baseline", "small"]'): (None, None, f"time -0.002 {why}"),
                      ("bench.Suite.time_sampled", "[]"): (None, None, f"raw sample -0.0001 {why}")}
    assert {key: r.value for key, r in stored.items() if key[0] == "bench.track_delta"} == {
        ("bench.track_delta", '["1"]'): -3.0, ("bench.track_delta", '["2"]'): 0.0}
    assert sum(r.status == "ok" for r in stored.values()) == POINTS + 3 - 4


def test_branch_without_repo_is_refused(project, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    path = tmp_path / "results" / "box" / f"{FIRST[:8]}-{ENV}.json"
    path.parent.mkdir(parents=True)
    path.write_text(dumped(document(FIRST)))
    assert main(["ingest", str(path), "--branch", "main", "--db", url, "--project", str(project)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["proofbench: ingest: --branch needs --repo (the checkout whose first-parent history "
                                "of the branch orders the commits); give --repo too, or leave --branch out"]
    assert not (tmp_path / "db.sqlite").exists()  # refused before the database is touched
