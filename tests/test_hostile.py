"""Hostile data in the report, the terminal and the site directory, --bench that selects nothing,
results files whose every string is hostile, and sidecar lines that are no record: the report is
rendered around what it cannot draw, text from data is shown as text, nothing in a file reaches a
command line as an option, and nothing is written outside the chosen output.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, make_project
from hostile import cli, digest, one_line, site_db, sql  # noqa: F401  (site_db: a fixture)
from test_report_site import HOSTILE_MACHINE

# -- the report and the terminal: values and text from data ------------------------------

EVIL = "box[/] [bold]x[/bold] \x00nul \u202eevil\u202c \x1b[31mred\x1b]0;title\x07"  # markup, NUL, RLO, escapes


@pytest.fixture(scope="module")
def hostile_db(site_db, tmp_path_factory) -> Path:
    """The report database with what no run writes but a database may hold: a result of 1e308,
    claims with NaN, infinite and impossible figures, control and bidirectional characters and
    rich markup in names, subjects and reasons."""
    db = tmp_path_factory.mktemp("hostile-report") / "hostile.sqlite"
    shutil.copyfile(site_db, db)
    huge = json.dumps([1e308] * 7)
    for statement, values in [
        ("UPDATE machines SET name = ? WHERE name = 'ci-box'", (EVIL,)),
        ("UPDATE commits SET subject = ?", (EVIL,)),
        ("UPDATE results SET reason = ? WHERE status != 'ok'", (EVIL,)),
        ("UPDATE benchmarks SET details = json_set(details, '$.description', ?)", (EVIL,)),
        ("UPDATE results SET value = 1e308, samples = ? WHERE id IN (SELECT r.id FROM results r JOIN benchmarks b "
         "ON b.id = r.benchmark_id WHERE b.metric = 'time' AND r.params_key LIKE '%baseline%' AND r.status = 'ok' "
         "ORDER BY r.id DESC LIMIT 3)", (huge,)),
        ("UPDATE results SET value = 5e-324 WHERE id = (SELECT max(id) FROM results WHERE status = 'ok')", ()),
        ("INSERT INTO claims VALUES ('nan-low', 'loading.lmdb_read', 'optimized', 's', 'q', 'speedup', 'time', "
         "NULL, NULL, 'any', '')", ()),  # NaN is stored as NULL by SQLite
        ("INSERT INTO claims VALUES ('inf-low', 'loading.lmdb_read', 'optimized', 's', 'q', 'speedup', 'time', "
         "9e999, 9e999, 'any', '')", ()),
        ("INSERT INTO claims VALUES ('rate-without-low', 'loading.lmdb_read', 'optimized', 's', 'q', 'throughput', "
         "'items', NULL, 5, 'any', '')", ()),
        ("INSERT INTO claims VALUES ('150%-less', 'loading.lmdb_read', 'optimized', 's', 'q', 'memory_reduction', "
         "'peak_memory', 1.5, 1.5, 'any', '')", ()),
        ("INSERT INTO claims VALUES (?, 'loading.lmdb_read', 'optimized', ?, ?, 'speedup', 'time', 1e305, 1e305, "
         "'any', ?)", ("huge-" + EVIL, EVIL, EVIL, EVIL)),
    ]:
        sql(db, statement, *values)
    return db


def _no_raw_controls(text: str) -> None:
    for character in ("\x00", "\u202e", "\u202c", "\x1b", "\x07"):
        assert character not in text, repr(character)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow is shown as infinite, not warned about
def test_the_report_renders_around_values_it_cannot_draw_and_shows_no_raw_control_characters(
        capsys, hostile_db, tmp_path):
    out = tmp_path / "site"
    code, stdout, err = cli(capsys, "report", "--out", str(out), "--db", f"sqlite:///{hostile_db}")
    assert code == 0 and err == "", err
    pages = {p.name: p.read_text() for p in out.rglob("*.html")}
    for page in pages.values():
        _no_raw_controls(page)
    every = "\n".join(pages.values())
    assert "&lt;U+202E&gt;evil" in every and "&lt;U+0000&gt;nul" in every and "box[/] [bold]x[/bold]" in every
    assert "1e+308 s" in every and "↕ marks a value too large or too small to draw" in every
    ledger = pages["claims.html"]
    for left_out in ("nan-low", "inf-low", "rate-without-low", "150%-less"):
        assert f"<code>{left_out}</code>" in ledger
    assert "claimed 1e+305×" not in every  # a promise no axis can hold is not drawn as a rule


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_terminal_output_shows_text_from_data_as_written(capsys, hostile_db):
    from sqlalchemy import create_engine

    from proofbench.claim import Claim
    from proofbench.reports import table

    url = f"sqlite:///{hostile_db}"
    code, out, err = cli(capsys, "compare", EVIL, HOSTILE_MACHINE, "--db", url)
    assert code == 0, err
    _no_raw_controls(out)
    assert "box[/] [bold]x[/bold] <U+0000>nul <U+202E>evil" in out
    code, out, err = cli(capsys, "check", "--no-record", "--no-git", "--db", url)
    assert code == 1 and "<U+202E>evil" in out, err  # the step in the test history is a regression
    _no_raw_controls(out)
    claim = Claim(id="c", subject="loading.lmdb_read", variant="optimized", source=EVIL, quote=EVIL, kind="speedup",
                  metric="time", low=2.0, high=2.0)
    table.print_latest(create_engine(url), EVIL, (claim,))
    out, _ = capsys.readouterr()
    assert "box[/] [bold]x[/bold]" in out
    _no_raw_controls(out)


def test_an_error_message_shows_control_characters_from_data_as_code_points(capsys, tmp_path):
    missing = tmp_path / f"results-{EVIL.replace(chr(0), '')}.json"  # a file name may hold anything but NUL
    code, _, err = cli(capsys, "ingest", str(missing), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert code == 2 and "<U+001B>[31mred" in one_line(err) and "no such results file" in err
    _no_raw_controls(err)


# -- run --bench ------------------------------------------------------------------------

def git_project(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "project")
    env = {**os.environ, "GIT_AUTHOR_NAME": "B", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "B",
           "GIT_COMMITTER_EMAIL": "b@example.invalid", "HOME": str(tmp_path)}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "scratch"]):
        subprocess.run(["git", "-C", str(project), *args], check=True, env=env, capture_output=True)
    return project


@pytest.mark.parametrize("bench, message", [
    ("(", "--bench '(': not a regular expression (missing ), unterminated subpattern at position 0)"),
    ("nothing-is-called-this", "--bench 'nothing-is-called-this': no benchmark matched"),
    (r"LmdbRead.*'large'", "no benchmark matched"),  # a size the profile does not run
    ("--output=/tmp/x", "no benchmark matched"),
])
def test_a_bench_that_selects_nothing_is_refused_before_asv_runs(capsys, monkeypatch, tmp_path, bench, message):
    from proofbench.pipeline import runner

    project = git_project(tmp_path)
    monkeypatch.setattr(runner, "drive", lambda *a, **k: pytest.fail("asv was started"))
    db = tmp_path / "db.sqlite"
    code, _, err = cli(capsys, "run", "--profile", "smoke", f"--bench={bench}", "--no-report", "--project",
                        str(project), "--db", f"sqlite:///{db}")
    assert code == 2 and message in one_line(err)
    with contextlib.closing(sqlite3.connect(db)) as con:
        assert con.execute("SELECT count(*) FROM results").fetchone() == (0,)


def test_a_results_file_asv_did_not_write_is_not_taken_as_new(monkeypatch, tmp_path):
    from proofbench import git, project
    from proofbench.machine.capture import capture
    from proofbench.pipeline import runner
    from proofbench.pipeline.asv import Layout, Log
    from proofbench.profile import get_profile

    layout = Layout.of(project.load(git_project(tmp_path) / "proofbench.toml"))
    machine = capture("box")
    old = layout.results / "box" / f"{git.head(layout.project.root)[:8]}-existing-py.json"
    old.parent.mkdir(parents=True)
    old.write_text('{"an earlier run": true}')
    os.mkfifo(old.with_name(old.name.replace("existing", "fifo")))  # never read: it would be waited on
    monkeypatch.setattr(runner, "drive", lambda *a, **k: Log(0, ()))  # asv ran, matched nothing, wrote nothing
    assert runner.run(layout, get_profile("smoke"), machine).results == ()

    def rewrites(*args, **kwargs):
        old.write_text('{"this run": true}')
        return Log(0, ())

    monkeypatch.setattr(runner, "drive", rewrites)
    assert runner.run(layout, get_profile("smoke"), machine).results == (old,)


def test_values_reach_asv_inside_their_options():
    from proofbench.pipeline import history, runner

    cmd = runner.asv_command("-box", "c" * 40, "--output=/tmp/x", Path("-conf.json"))
    assert "--bench=--output=/tmp/x" in cmd and "--machine=-box" in cmd and "--config=-conf.json" in cmd
    assert not any(part.startswith("--output") for part in cmd)
    cmd = history.asv_command(Path("-c.json"), "-box", Path("h"), "--output=/tmp/x", rerun=False)
    assert "--bench=--output=/tmp/x" in cmd and "--machine=-box" in cmd and cmd[-1] == "HASHFILE:h"


# -- nothing in a results file runs anything ---------------------------------------------

HOSTILE_STRINGS = ("--output=/tmp/proofbench-pwned", "$(touch proofbench-pwned)", "; touch proofbench-pwned",
                   "-c core.fsmonitor=touch proofbench-pwned", "`touch proofbench-pwned`")


@pytest.mark.slow
@pytest.mark.parametrize("commit", ["--output={out}/pwned", "deadbeef" * 5])
def test_nothing_in_a_results_file_reaches_a_subprocess_as_an_option(capsys, monkeypatch, smoke_run, tmp_path, commit):
    layout, outcome = smoke_run
    data = json.loads(outcome.results[0].read_text())
    data.update(commit_hash=commit.format(out=tmp_path), env_name=HOSTILE_STRINGS[1], python=HOSTILE_STRINGS[2],
                requirements={s: s for s in HOSTILE_STRINGS}, env_vars={"PATH": HOSTILE_STRINGS[3]})
    data["params"] = {**data["params"], "machine": HOSTILE_STRINGS[0], "python": HOSTILE_STRINGS[4]}
    folder = tmp_path / "results" / "box"
    folder.mkdir(parents=True)
    (folder / "deadbeef-hostile.json").write_text(json.dumps(data))
    started: list[list[str]] = []
    real_run, real_popen = subprocess.run, subprocess.Popen

    def run(args, *a, **k):
        started.append(list(args))
        return real_run(args, *a, **k)

    class Popen(real_popen):
        def __init__(self, args, *a, **k):
            started.append(list(args))
            super().__init__(args, *a, **k)

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(subprocess, "Popen", Popen)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "ingest", str(tmp_path / "results"), "--repo", str(REPO), "--sidecar",
                        str(layout.sidecar), "--project", str(REPO), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert code in (0, 2) and "Traceback" not in err
    assert all(argv[0] == "git" for argv in started), started  # git only: nothing builds, installs or runs
    if not commit.startswith("-"):  # a hash: git is asked about it, after --end-of-options
        assert any(argv[-2:] == [commit, "--"] and "--end-of-options" in argv for argv in started), started
    for argv in started:
        after = argv[argv.index("--end-of-options") + 1:] if "--end-of-options" in argv else []
        assert all(value not in argv or value in after for value in (commit, *HOSTILE_STRINGS)), argv
    assert not list(tmp_path.rglob("*pwned*")) and not Path("/tmp/proofbench-pwned").exists()


# -- the site directory -----------------------------------------------------------------

@pytest.mark.parametrize("link", [".proofbench-site", "static", "index.html", "subjects"])
def test_a_symbolic_link_in_the_site_directory_is_never_written_through(capsys, site_db, tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    out = tmp_path / "site"
    out.mkdir()
    (out / ".proofbench-site").write_text("an earlier site")
    target = outside / "precious.txt" if "." in link else outside
    (out / link).unlink(missing_ok=True)
    (out / link).symlink_to(target)
    code, _, err = cli(capsys, "report", "--out", str(out), "--db", f"sqlite:///{site_db}")
    line = one_line(err)
    assert code == 2 and ("outside" in line or "symbolic link" in line), line
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert (outside / "precious.txt").read_text() == "keep me"


def test_the_site_is_never_written_over_the_database(capsys, site_db, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "db.sqlite"
    shutil.copyfile(site_db, db)
    before = digest(db)
    for out in (folder, db):
        code, _, err = cli(capsys, "report", "--out", str(out), "--db", f"sqlite:///{db}")
        assert code == 2 and str(out) in one_line(err)
    # (SQLite's own -wal and -shm lie beside the file while this process holds it open)
    assert digest(db) == before and {p.name for p in folder.iterdir()} <= {"db.sqlite", "db.sqlite-wal",
                                                                            "db.sqlite-shm"}
    code, _, err = cli(capsys, "report", "--out", str(folder / "site"), "--db", f"sqlite:///{db}")
    assert code == 0, err


def test_names_that_read_alike_get_pages_of_their_own(tmp_path):
    from proofbench.reports.output import SiteWriter, slug

    writer = SiteWriter(tmp_path / "site")
    names = ["a/b", slug("a/b"), "A/B", "a\\b", "a\u202eb", "a\x00b", "." * 300, "index", "../index"]
    pages = [writer.page_name("subjects", name) for name in names]
    assert len({page.lower() for page in pages}) == len(names)
    assert all(page.startswith("subjects/") and "/" not in page[9:] and len(page) < 120 for page in pages)
    assert all(writer.path(page).parent == writer.root / "subjects" for page in pages)


def test_a_sidecar_line_that_is_no_record_is_passed_over(tmp_path):
    from proofbench.measure import sidecar

    path = tmp_path / "sidecar.jsonl"
    good = sidecar.Record("loading.LmdbRead", ("baseline", "tiny"), "failed", "MemoryError", "c" * 40, "env")
    sidecar.append(path, [good])
    lines = [b"\xff\xfe not UTF-8\n", b"[" * 100_000 + b"\n", b'{"benchmark": 1, "params": [], "status": "ok"}\n',
             b'{"benchmark": "b", "params": [["nested"]], "status": "ok"}\n', b'"just a string"\n',
             b'{"benchmark": "b", "params": [], "status": "ok", "details": []}\n',
             b'{"benchmark": "' + b"x" * (sidecar.MAX_LINE + 10) + b'", "params": [], "status": "ok"}\n']
    with path.open("ab") as fh:
        fh.writelines(lines)
    sidecar.append(path, [good])
    with path.open("ab") as fh:
        fh.write(b'{"benchmark": "torn')  # a killed writer's last line
    assert list(sidecar.read(path)) == [good, good]
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert list(sidecar.read(fifo)) == []  # not waited on


@pytest.mark.parametrize("target", ["the-database", "a-directory"])
def test_compare_never_writes_over_a_database_or_into_a_directory(capsys, site_db, tmp_path, target):
    db = tmp_path / "db.sqlite"
    shutil.copyfile(site_db, db)
    before = digest(db)
    (tmp_path / "a-directory").mkdir()
    out = db if target == "the-database" else tmp_path / "a-directory"
    code, _, err = cli(capsys, "compare", "ci-box", HOSTILE_MACHINE, "--format", "html", "--out", str(out),
                        "--db", f"sqlite:///{db}")
    assert code == 2 and f"--out {out}: is a" in one_line(err)
    assert digest(db) == before and not list((tmp_path / "a-directory").iterdir())


def test_profile_output_that_is_a_file_is_refused_before_profiling(capsys, tmp_path):
    (tmp_path / "a-file").write_text("keep")
    code, _, err = cli(capsys, "profile", "loading.lmdb_read", "--out", str(tmp_path / "a-file"), "--project",
                        str(REPO), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert code == 2 and "is a file; name a directory" in one_line(err)
    assert (tmp_path / "a-file").read_text() == "keep" and not (tmp_path / "db.sqlite").exists()


