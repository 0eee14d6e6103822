"""History across commits: first-parent ordering, asv's virtualenv environment, ingest, check.

The end-to-end test measures a real git repository made here: a copy of this project's
tree trimmed to the subjects of subjects/loading.py (so a commit's environment imports no
torch), with its own asv.conf.json whose matrix names what those subjects need. One commit
makes `loading.lmdb_read`'s optimized variant slower, one later commit does not build.
`proofbench history` builds each commit into asv's virtualenv environment, measures it,
ingests it with this project's registry (the trimmed tree's benchmarks are this project's
own, so ingest knows every name); `proofbench check` must name the slow commit.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench import cli, project
from proofbench.analysis import series
from proofbench.catalogue import load_catalogue
from proofbench.cli import check as check_command
from proofbench.cli import history as history_command
from proofbench.db.commits import place
from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result
from proofbench.db.session import connect
from proofbench.errors import InputError
from proofbench.git import first_parent
from proofbench.pipeline import history
from proofbench.pipeline.asv import Layout
from proofbench.pipeline.generate import generate
from proofbench.registry import Registry

SLOW_SUBJECT = "Read the store with a pause per epoch"
BROKEN_SUBJECT = "Break the build"
BEFORE, AFTER = 8, 8  # measured commits before the slow one, and from it on (the broken one aside)
# 8 against 8 is what the rank test of proofbench.analysis.detect needs to call a step with no overlap at all
# significant at its p_max (1e-3) with room to spare: 4 / C(16, 8) = 3e-4.


def git(repo: Path, *args: str, when: int = 0) -> str:
    stamp = (dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=when)).isoformat()
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp, "PATH": "/usr/bin:/bin",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo)}
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


def init_repo(repo: Path) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.invalid")
    git(repo, "config", "user.name", "Bench")
    git(repo, "config", "commit.gpgsign", "false")


def commit(repo: Path, subject: str, when: int, files: dict[str, str] | None = None) -> str:
    for name, text in (files or {"notes.txt": subject}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject, when=when)
    return git(repo, "rev-parse", "HEAD")


# -- first-parent order, fast ------------------------------------------------------------

@pytest.fixture
def merged_repo(tmp_path):
    """main: a, b, merge(feature: f1 (dated before b), f2), c."""
    repo = tmp_path / "merged"
    init_repo(repo)
    a = commit(repo, "a", 0)
    git(repo, "checkout", "-q", "-b", "feature")
    f1 = commit(repo, "f1", 1, {"f.txt": "1"})
    f2 = commit(repo, "f2", 5, {"f.txt": "2"})
    git(repo, "checkout", "-q", "main")
    b = commit(repo, "b", 3)
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature", when=6)
    merge = git(repo, "rev-parse", "HEAD")
    c = commit(repo, "c", 7)
    return repo, {"a": a, "b": b, "merge": merge, "c": c, "f1": f1, "f2": f2}


def test_commits_follow_the_first_parent_history_not_dates(merged_repo):
    repo, c = merged_repo
    assert history.commits(repo, "main") == (c["a"], c["b"], c["merge"], c["c"])
    assert history.commits(repo, "main", f"{c['b']}..main") == (c["merge"], c["c"])
    since = history.commits(repo, "main", since="2026-11-01T06:00:00+00:00")
    assert since == (c["merge"], c["c"])


def test_a_range_off_the_branch_is_refused(merged_repo):
    repo, c = merged_repo
    with pytest.raises(InputError, match="not on main's first-parent history"):
        history.commits(repo, "main", "feature")
    assert history.commits(repo, "main", "main..main") == ()  # nothing new: `history` says so and exits 0
    with pytest.raises(InputError, match="cannot list"):
        history.commits(repo, "main", "no-such-branch")


def test_a_hash_file_names_commits_in_any_order_and_they_come_back_in_the_branchs(merged_repo, tmp_path):
    # as asv takes a range: HASHFILE:PATH, one revision a line (a job measuring every Nth commit)
    repo, c = merged_repo
    listed = tmp_path / "every-other.txt"
    listed.write_text(f"{c['c']}\n\n# the first one, abbreviated\n{c['a'][:10]}  # and a comment\nmain~1\n")
    assert history.commits(repo, "main", f"HASHFILE:{listed}") == (c["a"], c["merge"], c["c"])
    assert history.commits(repo, "main", f"HASHFILE:{listed}", since="2026-11-01T06:00:00+00:00") == (
        c["merge"], c["c"])


def test_a_bad_hash_file_is_refused_naming_the_file_and_line(merged_repo, tmp_path):
    repo, c = merged_repo
    listed = tmp_path / "hashes.txt"
    with pytest.raises(InputError, match=r"hashes\.txt: cannot read the list of commits"):
        history.commits(repo, "main", f"HASHFILE:{listed}")
    listed.write_text(f"{c['a']}\nnot-a-commit\n")
    with pytest.raises(InputError, match=r"hashes\.txt, line 2: 'not-a-commit' names no commit"):
        history.commits(repo, "main", f"HASHFILE:{listed}")
    listed.write_text(f"{c['a']}\n{c['f1']}\n")
    with pytest.raises(InputError, match=f"commit {c['f1'][:8]} .* is not on main's first-parent history"):
        history.commits(repo, "main", f"HASHFILE:{listed}")
    listed.write_text("# nothing\n")
    with pytest.raises(InputError, match="no commits"):
        history.commits(repo, "main", f"HASHFILE:{listed}")


def _row(session, commit_id, bench, machine, env, value):
    session.add(Result(benchmark_id=bench.id, machine_id=machine.id, commit_id=commit_id, environment_id=env.id,
                       params={"variant": "baseline", "size": "tiny"}, params_key='["baseline", "tiny"]',
                       status="ok" if value else "failed", value=value, samples=[value] * 3 if value else None))


def test_series_points_are_ordered_by_position_and_merged_branches_left_out(merged_repo, sqlite_url):
    repo, c = merged_repo
    engine = connect(sqlite_url)
    values = {"a": 1.0, "b": 2.0, "merge": None, "c": 4.0, "f1": 9.0, "f2": 9.5}
    with Session(engine) as session, session.begin():
        bench = Benchmark(name="loading.LmdbRead.time_call", version="v", subject="loading.lmdb_read",
                          area="loading", metric="time", unit="seconds", higher_is_better=False)
        machine, env = Machine(name="m", fingerprint="f"), Environment(name="virtualenv-py3.11")
        session.add_all([bench, machine, env])
        for name in ("f1", "c", "a", "f2", "merge", "b"):  # stored out of order on purpose
            row = Commit(hash=c[name], subject=name)
            session.add(row)
            session.flush()
            _row(session, row.id, bench, machine, env, values[name])
        session.flush()
        assert place(session, first_parent(repo, "main"), "main") == 4
    with Session(engine) as session:
        (s,) = series.load(session, "main")
    assert [p.commit.subject for p in s.points] == ["a", "b", "merge", "c"]
    assert [p.commit.position for p in s.points] == [0, 1, 2, 3]
    assert s.values == [1.0, 2.0, None, 4.0] and s.samples[2] is None
    assert s.higher_is_better is False and s.params == {"variant": "baseline", "size": "tiny"}


def test_a_commit_keeps_the_branch_it_was_placed_on(merged_repo, sqlite_url):
    repo, c = merged_repo
    engine = connect(sqlite_url)
    with Session(engine) as session, session.begin():
        session.add(Commit(hash=c["a"], subject="a"))
        session.flush()
        assert place(session, first_parent(repo, "main"), "main") == 1
        assert place(session, first_parent(repo, "feature"), "feature") == 0
        assert place(session, first_parent(repo, "main"), "main") == 0  # already there
        row = session.scalars(select(Commit)).one()
        assert (row.branch, row.position) == ("main", 0)


# -- the environment, fast ---------------------------------------------------------------

def test_shared_site_leaves_out_installers_path_hooks_and_the_distribution_under_test(tmp_path):
    site = tmp_path / "site"
    for name in ("torch", "torch-2.13.0+cpu.dist-info", "numpy", "pip", "pip-26.3.dist-info", "setuptools",
                 "_distutils_hack", "proofbench", "proofbench-0.1.0.dist-info", "__editable___proofbench_0_1_0_finder.py",
                 "__editable__.proofbench-0.1.0.pth", "distutils-precedence.pth", "__pycache__", "pipx_like"):
        (site / name).mkdir(parents=True)
    view = history.shared_site(tmp_path / "view", "proofbench", site)
    assert sorted(p.name for p in view.iterdir()) == ["numpy", "pipx_like", "torch", "torch-2.13.0+cpu.dist-info"]
    assert (view / "torch").resolve() == (site / "torch").resolve()
    shutil.rmtree(site / "numpy")
    (site / "scipy").mkdir()
    history.shared_site(view, "proofbench", site)  # made again: stale links go, new entries come
    assert sorted(p.name for p in view.iterdir()) == ["pipx_like", "scipy", "torch", "torch-2.13.0+cpu.dist-info"]
    # measuring another project: proofbench stays visible, that project's own distribution goes
    (site / "my_train").mkdir()
    (site / "my_train-2.0.dist-info").mkdir()
    other = history.shared_site(tmp_path / "other", "my-train", site)
    assert {"proofbench", "proofbench-0.1.0.dist-info"} <= {p.name for p in other.iterdir()}
    assert not {"my_train", "my_train-2.0.dist-info"} & {p.name for p in other.iterdir()}


def test_link_shared_writes_a_pth_into_virtualenvs_of_this_python_only(tmp_path):
    def env(name, tool, python):
        site = tmp_path / "env" / name / "lib" / f"python{python}" / "site-packages"
        site.mkdir(parents=True)
        (tmp_path / "env" / name / "asv-env-info.json").write_text(json.dumps({"tool_name": tool, "python": python}))
        return site

    ours, conda, other = env("a", "virtualenv", history.PYTHON), env("b", "conda", history.PYTHON), env("c", "virtualenv", "2.7")
    (tmp_path / "env" / "half-made").mkdir()
    written = history.link_shared(tmp_path / "env", tmp_path / "view")
    assert written == [ours / history.SHARED_PTH]
    assert written[0].read_text().strip() == str(tmp_path / "view")
    assert not (conda / history.SHARED_PTH).exists() and not (other / history.SHARED_PTH).exists()


def test_config_takes_the_projects_matrix_and_the_layouts_directories(tmp_path):
    from conftest import make_project

    root = make_project(tmp_path / "project")
    conf = json.loads((root / "asv.conf.json").read_text())
    conf.update(matrix={"req": {"lmdb": [""]}}, branches=["trunk"], repo="../repo")
    (root / "asv.conf.json").write_text("// asv configurations carry comments\n" + json.dumps(conf))
    layout = Layout.under(project.load(root / "proofbench.toml"), tmp_path / "work")
    repo = history.repository(layout)
    assert repo == tmp_path / "repo"
    written = json.loads(history.write_config(layout, repo, "trunk").read_text())
    assert written["matrix"] == {"req": {"lmdb": [""]}} and written["repo"] == str(repo)
    assert written["env_dir"] == str(tmp_path / "work" / "env") and written["results_dir"] == str(layout.results)
    assert written["benchmark_dir"] == str(root / "benchmarks") and written["pythons"] == [history.PYTHON]
    assert history.default_branch(layout, repo) == "trunk"


def test_failed_builds_are_read_from_asvs_log():
    hashes = ("aaaaaaaa11", "bbbbbbbb22", "cccccccc33")
    log = ("[ 0.00%] · For proofbench commit aaaaaaaa <main~2>:\n[ 0.00%] ·· Building for virtualenv-py3.11\n"
           "[33.33%] · For proofbench commit bbbbbbbb <main~1>:\n·· Error running pip wheel (exit status 1)\n"
           "[33.33%] ·· Skipping virtualenv-py3.11\n[33.33%] ··· loading.X.time_call  failed\n"
           "[66.67%] · For proofbench commit cccccccc <main>:\n")
    assert history.failed_builds(log, hashes) == ("bbbbbbbb22",)


def test_a_commit_that_did_not_build_gets_that_reason_in_the_sidecar(tmp_path):
    from proofbench.measure import sidecar

    hashes = ("a" * 40, "b" * 40)
    log = (f"[ 0.00%] · For proofbench commit {'a' * 8} <main~1>:\n[ 0.00%] ··· loading.LmdbRead.time_call  ok\n"
           f"[50.00%] · For proofbench commit {'b' * 8} <main>:\n[50.00%] ·· Skipping virtualenv-py3.11\n")
    results = []
    for commit in hashes:
        path = tmp_path / f"{commit[:8]}-virtualenv-py3.11.json"
        value = [None, None] if commit.startswith("b") else [1e-4, 2e-4]
        path.write_text(json.dumps({"version": 2, "commit_hash": commit, "env_name": "virtualenv-py3.11",
                                    "params": {"machine": "box"}, "result_columns": ["result", "params", "version"],
                                    "results": {"loading.LmdbRead.time_call": [
                                        value, [["'baseline'", "'optimized'"], ["'tiny'"]], "v1"]}}))
        results.append(path)
    assert history.diagnose(log, hashes, tuple(results), tmp_path / "sidecar.jsonl") == 2
    records = list(sidecar.read(tmp_path / "sidecar.jsonl"))
    assert {(r.commit, r.benchmark, r.params, r.status, r.reason) for r in records} == {
        ("b" * 40, "loading.LmdbRead", (variant, "tiny"), "failed", history.BUILD_FAILED)
        for variant in ("baseline", "optimized")}


def test_a_result_takes_the_reasons_its_own_run_wrote_not_an_earlier_runs(tmp_path):
    # a check's re-measurement or a bisection shares the sidecar: a commit one of them could not
    # build kept "did not build" after the history's later run, which failed at import
    import datetime as dt
    from dataclasses import replace
    from types import SimpleNamespace

    from proofbench.measure import sidecar
    from proofbench.pipeline import diagnostics
    from proofbench.pipeline.results_file import Point

    started, commit = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc), "b" * 40
    when = {"earlier": started - dt.timedelta(hours=1), "this": started + dt.timedelta(seconds=30)}
    path = tmp_path / "sidecar.jsonl"
    sidecar.append(path, [
        sidecar.Record("loading.LmdbRead", ("optimized", "tiny"), "failed", history.BUILD_FAILED, commit=commit,
                       at=when["earlier"].isoformat(timespec="seconds")),
        sidecar.Record("loading.LmdbRead", (), "failed", "ImportError: cannot import name 'x'", commit=commit,
                       details={"method": "time_call", "source": "asv"},
                       at=when["this"].isoformat(timespec="seconds"))])
    point = Point("loading.LmdbRead.time_call", ("optimized", "tiny"), '["optimized", "tiny"]', None, None, None, "v1",
                  started, None)
    parsed = SimpleNamespace(commit=commit, env="virtualenv-py3.11")
    found = diagnostics.load(path)
    assert diagnostics.diagnosed(point, parsed, found)["reason"] == "ImportError: cannot import name 'x'"
    # a result that does not say when its benchmark started: every record counts, as before
    assert diagnostics.diagnosed(replace(point, started_at=None), parsed, found)["reason"] == history.BUILD_FAILED
    for odd in (5, "2026-11-28T11:00:00", "yesterday"):  # a time of another writer: no crash, read as it can be
        record = sidecar.Record("loading.LmdbRead", ("optimized", "tiny"), "failed", "odd", commit=commit, at=odd)
        got = diagnostics.diagnosed(point, parsed, {k: [record, *v] for k, v in found.items()})["reason"]
        assert got == ("odd" if odd != "2026-11-28T11:00:00" else "ImportError: cannot import name 'x'"), odd


def test_the_commits_where_no_benchmark_ran_are_named(tmp_path):
    # a commit that builds and whose benchmarks all fail (its module no longer imports) was said
    # nowhere: `history` printed only the commits asv could not build
    def results(commit: str, value: list) -> Path:
        path = tmp_path / f"{commit[:8]}-virtualenv-py3.11.json"
        path.write_text(json.dumps({"version": 2, "commit_hash": commit, "env_name": "virtualenv-py3.11",
                                    "params": {"machine": "box"}, "result_columns": ["result", "params", "version"],
                                    "results": {"loading.LmdbRead.time_call": [
                                        value, [["'baseline'", "'optimized'"], ["'tiny'"]], "v1"]}}))
        return path

    ok, unimportable, unbuilt, nothing = "a" * 40, "b" * 40, "c" * 40, "d" * 40
    files = (results(ok, [1e-4, None]), results(unimportable, [None, None]), results(unbuilt, [None, None]))
    outcome = history.HistoryOutcome(0, (ok, unimportable, unbuilt, nothing), "box", tmp_path, files, (unbuilt,), "")
    assert outcome.no_benchmark_ran() == (unimportable, nothing)


def test_the_environment_hides_the_project_tree_from_the_commits(tmp_path, monkeypatch, catalogue):
    import sys

    from proofbench.profile import get_profile

    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    env = history.history_environment(Layout.under(catalogue, tmp_path / "work"), get_profile("smoke"))
    assert "PYTHONPATH" not in env and "ASV_PYTHONPATH" not in env  # each commit brings its own harness
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)  # python3.11 of the shared packages
    assert env["PROOFBENCH_PROFILE"] == "smoke" and env["HOME"] == str(tmp_path / "work" / "home")


def test_asv_command_runs_the_listed_commits_in_the_virtualenv(tmp_path):
    cmd = history.asv_command(tmp_path / "c.json", "box", tmp_path / "h", r"^loading\.", rerun=False)
    assert f"--environment=virtualenv:{history.PYTHON}" in cmd
    assert "--record-samples" in cmd and "--skip-existing" in cmd and cmd[-1] == f"HASHFILE:{tmp_path / 'h'}"
    assert "--skip-existing" not in history.asv_command(tmp_path / "c.json", "box", tmp_path / "h", None, rerun=True)


def test_two_processes_never_build_commits_in_one_asv_environment_at_once(tmp_path, catalogue):
    # Two at once (a nightly check measuring again, a bisection by hand) built each other's
    # commits into the environment's one checkout and cached one commit's wheel under another's
    # hash, which measured the wrong code from then on. A second process is refused at once,
    # naming who holds the environments; within one process a hold nests (a command's, then
    # each run's), and it is given back when the outermost ends.
    import os
    import sys

    from proofbench.pipeline.asv import building

    layout = Layout.under(catalogue, tmp_path / "work")
    other = ("import sys\nfrom pathlib import Path\nfrom proofbench.errors import RunError\n"
             "from proofbench.pipeline.asv import Layout, building\n"
             "layout = Layout(None, Path(), Path(), Path(), Path(sys.argv[1]), Path())\n"
             "try:\n    with building(layout):\n        print('held')\nexcept RunError as exc:\n    print(exc)\n")

    def second() -> str:
        return subprocess.run([sys.executable, "-c", other, str(layout.env_dir)], capture_output=True, text=True,
                              check=True).stdout.strip()

    with building(layout):
        with building(layout):  # nested in this process: the same hold
            pass
        holder = " ".join(["proofbench", *sys.argv[1:2]])  # the command, as the lock file says it
        assert second() == (f"{layout.env_dir}: {holder} (pid {os.getpid()}) is building and measuring commits in "
                            f"these asv environments; two at once build each other's code and slow each other's "
                            f"timings: run this when it is done")
    assert second() == "held"  # given back at the end
    with building(layout), building(Layout.under(catalogue, tmp_path / "other")):  # another directory's: its own
        pass


def test_asvs_output_is_kept_as_it_comes_not_when_asv_ends(tmp_path):
    # a job killed midway left no history.log, or the previous run's: the file one reads after a timeout
    import os
    import sys
    import threading
    import time

    from proofbench.pipeline.asv import drive

    path, go = tmp_path / "history.log", tmp_path / "go"
    script = (f"import pathlib, time\nprint('built 1 of 2', flush=True)\ngo = pathlib.Path({str(go)!r})\n"
              f"for _ in range(600):\n    if go.exists():\n        break\n    time.sleep(0.05)\nprint('done')\n")
    seen = []

    def watch() -> None:  # asv goes on only once its first line is in the file
        for _ in range(200):
            if "built 1 of 2" in path.read_text():
                seen.append(True)
                break
            time.sleep(0.05)
        go.touch()

    with open(path, "w", encoding="utf-8") as kept:
        watcher = threading.Thread(target=watch)
        watcher.start()
        log = drive([sys.executable, "-c", script], tmp_path, dict(os.environ), tee=kept)
        watcher.join()
    assert seen == [True] and log.text == "built 1 of 2\ndone\n" == path.read_text()


def test_run_is_refused_while_another_command_measures_in_the_project(tmp_project, tmp_path, capsys):
    # `run` builds nothing, but it rewrites the suite another command's asv reads, and two at once
    # slow each other's timings: it waits for no one and writes nothing
    import sys

    from proofbench import project as project_file
    from proofbench.cli import main
    from proofbench.pipeline.asv import Layout

    env_dir = Layout.of(project_file.load(tmp_project / "proofbench.toml")).env_dir
    script = ("import sys, time\nfrom pathlib import Path\nfrom proofbench.pipeline.asv import Layout, building\n"
              "with building(Layout(None, Path(), Path(), Path(), Path(sys.argv[1]), Path())):\n"
              "    print('held', flush=True)\n    time.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", script, str(env_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code = main(["run", "--profile", "smoke", "--no-report", "--project", str(tmp_project),
                     "--db", f"sqlite:///{tmp_path / 'db.sqlite'}"])
        err = " ".join(capsys.readouterr().err.split())
        assert code == 2 and f"{env_dir}: proofbench" in err and "build each other's code" in err, err
        assert not (tmp_project / "benchmarks").exists()  # the suite was not written
    finally:
        holder.kill()
        holder.wait()


# -- end to end: a real repository measured commit by commit ------------------------------

def _project_files() -> list[str]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split() if (REPO / f).is_file()]


def _subject_closure(module: str) -> set[str]:
    """The file of `module` (a path below subjects/, dotted) and of the catalogue modules it
    imports, transitively, with their packages' __init__.py."""
    seen, todo = set(), [module]
    while todo:
        path = "subjects/" + todo.pop().replace(".", "/") + ".py"
        if path in seen or not (REPO / path).is_file():
            continue
        seen.add(path)
        todo += re.findall(r"^\s*(?:from|import) proofbench\.subjects\.([\w.]+)", (REPO / path).read_text(), re.M)
    return seen | {str(Path(p).parent / "__init__.py") for p in seen}


def make_trimmed_tree(repo: Path) -> None:
    """This project's tree with only the subjects of subjects/loading.py (no torch imported)."""
    keep = _subject_closure("loading")
    for name in _project_files():
        top = name.split("/")[0]
        wanted = (top in ("harness", "db", "reports") or name in keep or name in ("pyproject.toml", "README.md")
                  or (top == "subjects" and not name.endswith(".py")))
        if wanted:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    if not (repo / "README.md").exists():
        (repo / "README.md").write_text("proofbench\n")
    loading = Registry()
    catalogue = load_catalogue(project.load(REPO / "proofbench.toml")).registry
    loading.register(*(s for s in catalogue if s.prepare.__module__ == "proofbench.subjects.loading"))
    (repo / "benchmarks").mkdir()
    shutil.copy2(REPO / "benchmarks" / "__init__.py", repo / "benchmarks" / "__init__.py")
    generate(loading, repo / "benchmarks")
    conf = json.loads((REPO / "asv.conf.json").read_text())
    conf["matrix"] = {"req": {"lmdb": [""], "numpy": [""], "psutil": [""]}}  # what these subjects import
    (repo / "asv.conf.json").write_text(json.dumps(conf, indent=2))
    # The smoke profile's tiny calls take about 0.05 ms: their level moves by a third with the
    # machine's state from one run to the next. The slow commit makes them 80x slower; the
    # repository's own threshold keeps the check to steps of that kind.
    (repo / "proofbench.toml").write_text('subjects = ["proofbench.subjects.loading"]\n\n[check]\nmin_step = 0.5\n')


def _slower(repo: Path) -> dict[str, str]:
    path = repo / "subjects" / "loading.py"
    text = path.read_text()
    anchor = re.search(r"^def _read_batched\(.*\n", text, re.M)
    if anchor is None:
        pytest.fail("subjects/loading.py has no _read_batched() to make slower; update this test")
    slow = text[:anchor.end()] + "    __import__('time').sleep(0.004)  # deliberately slower\n" + text[anchor.end():]
    return {"subjects/loading.py": slow}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The trimmed repository's commits, measured by `proofbench history` into SQLite."""
    root = tmp_path_factory.mktemp("history")
    repo, work = root / "repo", root / "work"
    init_repo(repo)
    make_trimmed_tree(repo)
    hashes = [commit(repo, "Start from the loading subjects", 0, {})]
    hashes += [commit(repo, f"Document step {i}", i) for i in range(1, BEFORE)]
    hashes.append(commit(repo, SLOW_SUBJECT, BEFORE, _slower(repo)))
    pyproject = (repo / "pyproject.toml").read_text()
    broken = commit(repo, BROKEN_SUBJECT, BEFORE + 1, {"pyproject.toml": pyproject.replace("[project]", "[project", 1)})
    hashes.append(broken)
    hashes.append(commit(repo, "Mend the build", BEFORE + 2, {"pyproject.toml": pyproject}))
    hashes += [commit(repo, f"Tidy {i}", BEFORE + 2 + i) for i in range(1, AFTER - 1)]
    url = f"sqlite:///{root / 'db.sqlite'}"
    argv = ["history", "--project", str(repo), "--workdir", str(work), "--profile", "smoke",
            "--bench", r"^loading\.LmdbRead\.time_call\(", "--db", url]
    commands = tuple(dict.fromkeys(cli.COMMANDS + (history_command, check_command)))  # once listed in cli.py
    return {"repo": repo, "work": work, "url": url, "hashes": hashes, "broken": broken, "argv": argv,
            "commands": commands, "status": _main(commands, argv)}


def _main(commands, argv) -> int:
    """`proofbench ...` through the real entry point, with these commands listed."""
    saved = cli.COMMANDS
    cli.COMMANDS = commands
    try:
        return cli.main(argv)
    finally:
        cli.COMMANDS = saved


@pytest.mark.slow
def test_history_ingests_every_commit_in_first_parent_order(measured):
    assert measured["status"] == 0
    engine = connect(measured["url"])
    with Session(engine) as session:
        commits = session.scalars(select(Commit).order_by(Commit.position)).all()
        assert [c.hash for c in commits] == measured["hashes"]
        assert [c.position for c in commits] == list(range(len(measured["hashes"])))
        assert all(c.branch == "main" and c.committed_at is not None for c in commits)
        assert commits[BEFORE].subject == SLOW_SUBJECT
        rows = session.scalars(select(Result)).all()
        assert {r.environment.name.split("-")[0] for r in rows} == {"virtualenv"}
        by_commit = {}
        for r in rows:
            by_commit.setdefault(r.commit.hash, []).append(r)
        assert set(by_commit) == set(measured["hashes"])
        kept = measured["work"] / history.LOG  # asv's output, where the reason says it is
        assert {(r.status, r.reason) for r in by_commit[measured["broken"]]} == {
            ("failed", f"{history.BUILD_FAILED} (asv's output: {kept})")}
        assert measured["broken"][:8] in kept.read_text()
        good = [r for h, rs in by_commit.items() if h != measured["broken"] for r in rs]
        assert all(r.status == "ok" and len(r.samples) >= 3 for r in good)


@pytest.mark.slow
def test_the_slowdown_is_measured_from_the_commit_that_made_it(measured):
    engine = connect(measured["url"])
    with Session(engine) as session:
        (s,) = [s for s in series.load(session, "main") if s.params["variant"] == "optimized"]
    before = [v for v in s.values[:BEFORE] if v is not None]
    after = [v for v in s.values[BEFORE:] if v is not None]
    assert max(before) < 0.004 <= min(after)  # the sleep is in every call from that commit on


@pytest.mark.slow
def test_check_exits_1_and_names_the_slow_commit(measured, capsys):
    capsys.readouterr()
    argv = ["check", "--repo", str(measured["repo"]), "--project", str(measured["repo"]), "--no-confirm",
            "--db", measured["url"], "--format", "json"]
    assert _main(measured["commands"], argv) == 1
    report = json.loads(capsys.readouterr().out)
    slow = measured["hashes"][BEFORE]
    found = [a for a in report["alerts"] if a["kind"] == "regression" and a["state"] == "new"
             and a["series"]["params"]["variant"] == "optimized"]
    assert [a["commit"]["hash"] for a in found] == [slow]
    assert found[0]["commit"]["subject"] == SLOW_SUBJECT and found[0]["ratio"] > 2
    assert found[0]["series"]["benchmark"] == "loading.LmdbRead.time_call"
    assert _main(measured["commands"], argv) == 0  # the next night: still open, not new
    again = json.loads(capsys.readouterr().out)
    assert [a["commit"]["hash"] for a in again["alerts"]
            if a["state"] == "open" and a["series"]["params"]["variant"] == "optimized"] == [slow]
    assert again["counts"]["new_regressions"] == 0


@pytest.mark.slow
def test_a_second_history_run_reuses_the_environment_and_adds_nothing(measured, capsys):
    env_dir = measured["work"] / "env"
    (made,) = env_dir.glob("*/pyvenv.cfg")  # written by virtualenv when the environment is created
    stamp = made.stat().st_mtime_ns
    capsys.readouterr()
    assert _main(measured["commands"], measured["argv"]) == 0
    assert "ingested 0 file(s) holding 0 result(s)" in capsys.readouterr().err.replace("\n", " ")
    assert made.exists() and made.stat().st_mtime_ns == stamp
