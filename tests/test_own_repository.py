"""proofbench in a repository of its own: a team's training code, its subjects, its commits.

The end-to-end test makes a git repository in a temporary directory (a tiny package `mytrain`,
and a `db/` package of its own, which an installed proofbench must not shadow), runs the
installed `proofbench` there, in the order a user would: init, run, history over its 16
commits (the 9th makes the optimized function several times slower: a copy through a Python
list), check (exit 1, naming that commit)
and report (the subject page marks the step at that commit). Nothing is written into the
proofbench checkout.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SLOW_SUBJECT = "Copy the values through a list, by mistake"
BEFORE, AFTER = 8, 8  # commits before the slow one, and from it on

PACKAGE = '''"""Feature scaling for the training loop."""
import numpy as np

REPEAT = {repeat}


def normalize_loop(values: list[float]) -> list[float]:
    """Scale to zero mean and unit variance, one value at a time."""
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return [(v - mean) / var ** 0.5 for v in values]


def normalize_vectorized(values: np.ndarray) -> np.ndarray:
    """The same with numpy."""
    for _ in range(REPEAT - 1):
        values = np.array(values.tolist())  # a copy through Python floats, by mistake
    return (values - values.mean()) / values.std()
'''

SUBJECTS = '''"""mytrain's subjects: normalization, looped and vectorized."""
import numpy as np

import db  # this repository's own db package, not anything of proofbench's
from mytrain import normalize_loop, normalize_vectorized
from proofbench import Equivalence, Metric, Size, Subject, Variant, Workload, register

assert db.OWNER == "mytrain", db.__file__


def _prepare(ctx):
    values = np.random.default_rng(0).normal(size=ctx.size["n"])
    return Workload(inputs=values, items=len(values))


register(Subject(
    area="features", name="normalize", item="value",
    description="zero mean, unit variance: a Python loop vs numpy",
    prepare=_prepare,
    variants=(Variant("baseline", lambda v: np.asarray(normalize_loop(v.tolist()))),
              Variant("optimized", normalize_vectorized)),
    equivalence=Equivalence(Metric("max_abs_diff", "units", False), 1e-9, lambda a, b: float(np.max(np.abs(a - b)))),
    sizes=(Size.of("tiny", n=20_000), Size.of("small", n=100_000), Size.of("large", n=2_000_000)),
))
'''

# The project's own profiles. `nightly`: each variant's own time per call over the commits (the
# series the check reads), calls of a few milliseconds and enough samples that a busy machine
# (other test runs beside this one) does not hide a several-fold step in 8 points a side.
# `speedups`: everything, each speedup's rounds shared by two processes forked from asv's
# benchmark process (the history leaves the speedups out: measured at every commit in two
# processes, they took most of this test's time).
_MEASURED = """device = "cpu"
threads = 1
sizes = ["small"]
rounds = 1
repeat = [7, 15, 2.0]
warmup_time = 0.05
"""
PROFILES = f"""[nightly]
description = "mytrain's nightly profile: the time series"
{_MEASURED}bench = "\\\\.time_call"

[speedups]
description = "mytrain's speedups, in two processes"
{_MEASURED}processes = 2
"""

PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "mytrain"
version = "0.1.0"
requires-python = ">=3.11"

[tool.setuptools]
packages = ["mytrain", "db"]
'''


def _git(repo: Path, *args: str, when: int = 0) -> str:
    stamp = f"2026-11-{1 + when // 24:02d}T{when % 24:02d}:00:00+00:00"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp, "GIT_AUTHOR_NAME": "Team",
           "GIT_AUTHOR_EMAIL": "team@example.invalid", "GIT_COMMITTER_NAME": "Team",
           "GIT_COMMITTER_EMAIL": "team@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def _commit(repo: Path, subject: str, when: int, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", subject, when=when)
    return _git(repo, "rev-parse", "HEAD")


def proofbench(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """The installed proofbench, run in `repo` as a user would."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROOFBENCH_", "PYTHONPATH"))}
    return subprocess.run([sys.executable, "-m", "proofbench", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """The repository, its 16 commits, and what each command printed."""
    repo = tmp_path_factory.mktemp("own") / "my-training-repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    hashes = [_commit(repo, "Feature scaling", 0, {"pyproject.toml": PYPROJECT, ".gitignore": ".asv/\n.proofbench/\n",
                                                   "mytrain/__init__.py": PACKAGE.format(repeat=1),
                                                   "db/__init__.py": 'OWNER = "mytrain"\n'})]
    init = proofbench(repo, "init")
    (repo / "bench" / "subjects.py").write_text(SUBJECTS)
    (repo / "bench" / "profiles.toml").write_text(PROFILES)
    project_file = repo / "proofbench.toml"
    project_file.write_text('profiles = "bench/profiles.toml"\n' + project_file.read_text())
    hashes.append(_commit(repo, "Benchmarks for proofbench", 1, {}))
    hashes += [_commit(repo, f"Notes {i}", 1 + i, {"NOTES.md": f"note {i}\n"}) for i in range(1, BEFORE - 1)]
    hashes.append(_commit(repo, SLOW_SUBJECT, BEFORE, {"mytrain/__init__.py": PACKAGE.format(repeat=3)}))
    hashes += [_commit(repo, f"More notes {i}", BEFORE + i, {"NOTES.md": f"more {i}\n"}) for i in range(1, AFTER)]
    url = f"sqlite:///{repo.parent / 'team.sqlite'}"
    outputs = {"init": init, "run": proofbench(repo, "run", "--profile", "speedups", "--db", url),
               "history": proofbench(repo, "history", "--profile", "nightly", "--db", url),
               # the history decides the steps: each measured again at its neighbours, larger ones
               # first, within a budget that bounds the fixture on a noisy host (the default 600 s
               # took 130 s more there than on a quiet one; past it a step stands on the history's word)
               "check": proofbench(repo, "check", "--format", "json", "--profile", "nightly", "--confirm-budget",
                                   "90", "--db", url),
               "report": proofbench(repo, "report", "--db", url)}
    return {"repo": repo, "hashes": hashes, "out": outputs}


def test_init_writes_the_project_file_and_asks_nothing(team):
    init = team["out"]["init"]
    assert init.returncode == 0, init.stderr
    for name in ("proofbench.toml", "asv.conf.json", "bench/subjects.py"):
        assert f"wrote {team['repo'] / name}" in init.stderr
    again = proofbench(team["repo"], "init")
    assert again.returncode == 0 and "wrote" not in again.stderr and "kept" in again.stderr
    assert f"kept  {team['repo'] / '.gitignore'}" in init.stderr  # it names .asv/ and .proofbench/ already


def test_run_measures_the_checkout_in_hand(team):
    run = team["out"]["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert "features.normalize" in run.stdout and "optimized" in run.stdout
    assert "separate processes" not in run.stdout  # the rounds reached the database (the suite's package is `bench`)
    assert not (Path(__file__).resolve().parent.parent / "bench").exists()  # nothing in proofbench's checkout
    with sqlite3.connect(team["repo"].parent / "team.sqlite") as db:
        stored = [json.loads(text) for (text,) in db.execute("SELECT rounds FROM results WHERE rounds IS NOT NULL")]
    documents = [d for d in stored if d is not None]  # a JSON column keeps "no rounds" as null
    assert documents and all(d["plan"]["processes"] == 2 and {r["process"] for r in d["rounds"]} == {0, 1}
                             for d in documents)  # the speedup measured in two forked processes, through asv


def test_history_measures_every_commit_with_its_own_package(team):
    history = team["out"]["history"]
    assert history.returncode == 0, history.stderr[-3000:]
    assert f"{len(team['hashes'])} commit(s) of main" in history.stderr


def test_check_exits_1_naming_the_commit_that_made_it_slower(team):
    check = team["out"]["check"]
    assert check.returncode == 1, check.stdout + check.stderr
    report = json.loads(check.stdout)
    slow = team["hashes"][BEFORE]
    found = [a for a in report["alerts"] if a["state"] == "new" and a["kind"] == "regression"
             and a["series"]["params"].get("variant") == "optimized" and a["series"]["metric"] == "time"]
    assert [a["commit"]["hash"] for a in found] == [slow], report["alerts"]
    assert found[0]["commit"]["subject"] == SLOW_SUBJECT and found[0]["ratio"] > 2


def test_the_report_marks_the_step_at_that_commit(team):
    report = team["out"]["report"]
    assert report.returncode == 0, report.stderr
    site = Path(report.stdout.strip()).parent
    page = (site / "subjects" / "features.normalize.html").read_text()
    assert team["hashes"][BEFORE][:8] in page and SLOW_SUBJECT in page


def test_the_gate_measures_the_slow_commit_against_its_parent_and_exits_1(team):
    before, slow = team["hashes"][BEFORE - 1], team["hashes"][BEFORE]
    gate = proofbench(team["repo"], "gate", before, slow, "--rounds", "4", "--profile", "nightly", "--format", "json",
                      "--bench", r"features\.Normalize\.time_call\('optimized'")
    assert gate.returncode == 1, gate.stdout + gate.stderr[-2000:]
    report = json.loads(gate.stdout)
    (series,) = report["series"]
    assert (report["base"], report["head"], series["verdict"]) == (before, slow, "regression")
    assert series["ratio"]["rounds"] == 4 and series["ratio"]["low"] > 1.2
    kept = team["repo"] / ".proofbench" / "remeasure" / "discovered"  # rounds 3 and 4 read what 1 and 2 found
    assert sorted(p.name for p in kept.iterdir()) == sorted(f"{h}.json" for h in (before, slow))
    assert "features.Normalize.time_call" in {b["name"] for b in json.loads((kept / f"{slow}.json").read_text())}


@pytest.mark.parametrize("argv, message", [
    (["nosuchbranch"], "'nosuchbranch' names no commit"),
    (["main", "nosuchhead"], "'nosuchhead' names no commit"),
    (["HEAD", "HEAD"], "'HEAD' ({head}) is already in 'HEAD': its merge-base is itself, so there is nothing to "
                       "measure it against (name the branch's head and its base)"),
])
def test_the_gate_refuses_a_base_or_head_it_cannot_measure_before_anything_runs(team, argv, message):
    gate = proofbench(team["repo"], "gate", *argv)
    assert gate.returncode == 2 and gate.stderr.count("\n") == 1, gate.stderr
    assert gate.stderr.strip() == f"proofbench: {team['repo']}: " + message.format(head=team["hashes"][-1][:8])


def test_without_a_project_file_the_message_says_proofbench_init(tmp_path):
    out = proofbench(tmp_path, "run")
    assert out.returncode == 2 and "proofbench init" in out.stderr and out.stderr.count("\n") == 1


def test_a_subjects_module_that_cannot_be_imported_is_named_with_its_error(tmp_path):
    (tmp_path / "proofbench.toml").write_text('subjects = ["bench.nowhere"]\n')
    out = proofbench(tmp_path, "generate")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "'bench.nowhere' cannot be imported: ModuleNotFoundError" in out.stderr


def test_a_claim_about_an_unknown_subject_is_refused(team, tmp_path):
    project = tmp_path / "p"
    (project / "bench").mkdir(parents=True)
    (project / "bench" / "subjects.py").write_text((team["repo"] / "bench" / "subjects.py").read_text())
    (project / "bench" / "claims.toml").write_text(
        '[[claim]]\nid = "x"\nsubject = "features.nothing"\nvariant = "optimized"\nsource = "a.md"\nquote = "q"\n'
        'kind = "speedup"\nmetric = "time"\nlow = 2.0\n')
    (project / "proofbench.toml").write_text('subjects = ["bench.subjects"]\nclaims = "bench/claims.toml"\n')
    env = {**os.environ, "PYTHONPATH": str(team["repo"])}  # mytrain and its db package
    out = subprocess.run([sys.executable, "-m", "proofbench", "generate"], cwd=project, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "unknown subject 'features.nothing'" in out.stderr
    assert str(project / "bench" / "claims.toml") in out.stderr
