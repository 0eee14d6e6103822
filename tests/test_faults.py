"""Fault injection: the real `proofbench` command line against deliberately broken subjects
(tests/faulty: a variant that raises, hangs, exhausts its memory bound or is killed, a subject
whose input is malformed) and broken inputs; asserts what is stored, the exit codes and the
messages. See tests/faulty/__init__.py for how the faulty project plugs into the pipeline.
"""
from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from faulty.broken import hostile_database, variant_of, with_nan, with_wrong_parameters
from faulty.project import (
    BENCH,
    ROOT,
    Project,
    alive,
    copy_database,
    count_files,
    files_and_rows,
    processes_of,
    results_file,
    rows,
    state,
    wait_for,
)

pytestmark = pytest.mark.slow

FAULTS = {  # variant of loading.faulty_variants -> what its failure reason must say
    "raises": "ValueError: deliberate failure after 200 numbers",
    "hangs": "timeout after 2 s",
    "exhausts": "out of memory (limit 256M): MemoryError",
    "killed": "killed by signal 9 (SIGKILL)",
}
BAD_FASTA = "setup: InputError: " + str(ROOT / "tests/faulty/inputs/broken.fasta") + ":5: column 4: character '4'"


def _one_line_error(completed) -> str:
    lines = [line for line in completed.stderr.splitlines() if line.startswith("proofbench:")]
    assert len(lines) == 1 and "Traceback" not in completed.stderr, completed.stderr
    return lines[0]


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    """One `proofbench run` of every faulty subject into a private work directory and SQLite file."""
    tmp = tmp_path_factory.mktemp("faulty")
    project = Project(tmp / "work", f"sqlite:///{tmp / 'faulty.sqlite'}")
    project.generate()
    completed = project.cli("run", "--profile", "smoke", "--bench", BENCH, "--no-report")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return project, completed


def _by_key(db_path: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for row in rows(db_path):
        klass, method = row["benchmark"].rsplit(".", 1)
        out[(f"{klass.split('.')[-1]}.{method}", row["params"][0])] = row
    return out


# -- faults during a run -----------------------------------------------------------------

def test_each_fault_is_stored_as_failed_with_its_reason(faulty_run):
    project, _ = faulty_run
    stored = _by_key(project.db_path)
    for method in ("time_call", "track_speedup"):
        for variant, reason in FAULTS.items():
            row = stored[(f"FaultyVariants.{method}", variant)]
            assert (row["status"], row["reason"]) == ("failed", reason), (method, variant)
            assert row["value"] is None and row["samples"] is None
    # Every benchmark that needs the workload fails with the input's error; those with
    # nothing to measure for a variant (items beside the baseline, the baseline's own
    # speedup) never prepare it and stay skipped.
    needs_workload = [("time_call", "baseline"), ("time_call", "optimized"),
                      ("track_items", "baseline"), ("track_speedup", "optimized")]
    for method, variant in needs_workload:
        row = stored[(f"FaultyInput.{method}", variant)]
        assert row["status"] == "failed" and row["reason"].startswith(BAD_FASTA), (method, variant)
    for method, variant in (("track_items", "optimized"), ("track_speedup", "baseline")):
        assert stored[(f"FaultyInput.{method}", variant)]["status"] == "skipped"


def test_every_other_benchmark_of_the_run_completes(faulty_run):
    project, _ = faulty_run
    stored = _by_key(project.db_path)
    assert len(stored) == 27  # 3 subjects' benchmarks x variants, all stored
    for variant in ("baseline", "optimized"):
        timed = stored[("FaultySound.time_call", variant)]
        assert timed["status"] == "ok" and len(timed["samples"]) >= 3
    baseline = stored[("FaultyVariants.time_call", "baseline")]
    assert (baseline["status"], baseline["reason"]) == ("ok", "")  # the kill's reason stays on the killed one
    # Items per call are the workload's, recorded once with the baseline; the faulty variants
    # have nothing of their own to count there.
    assert stored[("FaultyVariants.track_items", "baseline")]["value"] == 200.0
    assert all(stored[("FaultyVariants.track_items", v)]["status"] == "skipped" for v in FAULTS)


def test_the_terminal_summary_names_each_failure(faulty_run):
    _, completed = faulty_run
    for reason in FAULTS.values():
        assert reason in completed.stdout
    assert "setup: InputError:" in completed.stdout
    assert "ingested 1 file(s) holding 27 result(s)" in completed.stderr


def test_the_report_names_each_failure(faulty_run, tmp_path):
    project, _ = faulty_run
    out = tmp_path / "site"
    completed = project.cli("report", "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    html = "\n".join(p.read_text() for p in out.rglob("*.html"))
    for reason in FAULTS.values():
        assert reason in html
    assert "broken.fasta:5: column 4" in html


def test_check_runs_over_failed_results(faulty_run):
    project, _ = faulty_run
    completed = project.cli("check", "--no-git", "--no-record", "--format", "json")
    if "invalid choice: 'check'" in completed.stderr:
        pytest.skip("`proofbench check` is not a command of harness/cli.py yet")
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["format"] == "proofbench-check"


def _exit_status(proc: subprocess.Popen, project: Project, signum: int, seconds: float = 60) -> int:
    # The status once the process exits; where it has not within `seconds`, its threads' stacks
    # (faulthandler, on SIGABRT) and the end of its error output, as the failure's message.
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=30)
        pytest.fail(f"still running {seconds:g} s after signal {signum}:\n"
                    + (project.workdir / "stderr.txt").read_text()[-6000:])


def test_ctrl_c_and_sigterm_during_a_run_keep_the_database_and_the_next_run_goes_on(faulty_run, tmp_path):
    project, _ = faulty_run
    mine = Project(tmp_path / "work", f"sqlite:///{tmp_path / 'copy.sqlite'}")
    copy_database(project.db_path, mine.db_path)
    before = state(mine.db_path)
    mine.generate()
    for signum in (signal.SIGINT, signal.SIGTERM):
        marks = tmp_path / f"marks-{signum}"
        marks.mkdir()
        proc = mine.start("run", "--profile", "smoke", "--bench", r"^loading\.FaultyVariants\.time_call",
                          "--no-report", PROOFBENCH_FAULTY_MARKS=str(marks), PROOFBENCH_FAULTY_TIMEOUT="60",
                          PYTHONFAULTHANDLER="1")
        hanging = wait_for(lambda: list(marks.glob("hang-*")), proc, 120)
        proc.send_signal(signum)
        assert _exit_status(proc, mine, signum) == 130
        assert "interrupted" in (mine.workdir / "stderr.txt").read_text()
        assert wait_for(lambda: not alive(int(hanging[0].read_text())), None, 20)  # the hung benchmark too
        assert not processes_of(mine.workdir)  # nor asv, nor its forkserver
        assert state(mine.db_path) == before
    again = mine.cli("run", "--profile", "smoke", "--bench", r"^loading\.FaultySound\.", "--no-report")
    assert again.returncode == 0, again.stderr
    assert "ingested 1 file(s) holding 6 result(s)" in again.stderr
    sound = [r for r in rows(mine.db_path) if "FaultySound" in r["benchmark"]]
    assert len(sound) == 6 and {r["status"] for r in sound} == {"ok", "skipped"}  # skipped: the baseline's speedup


# -- faults during ingest ----------------------------------------------------------------

FILES = 24  # enough that a signal sent once the first is in lands while later ones are still being written


@pytest.fixture(scope="module")
def many_files(faulty_run, tmp_path_factory):
    """FILES results files of distinct commits, each with 200+ rows, and a reference database
    holding all of them, ingested without interruption."""
    project, _ = faulty_run
    source = results_file(project)
    data = json.loads(source.read_text())
    folder = tmp_path_factory.mktemp("many") / "results" / source.parent.name
    folder.mkdir(parents=True)
    for i in range(FILES):
        name, variant = variant_of(data, f"{i + 1:02x}" * 20, sizes=100)
        (folder / name).write_text(json.dumps(variant))
    reference = Project(project.workdir, f"sqlite:///{folder.parent.parent / 'reference.sqlite'}")
    started = time.monotonic()
    completed = reference.cli("ingest", str(folder.parent), "--sidecar", str(project.sidecar))
    assert completed.returncode == 0, completed.stderr
    return reference, folder.parent, time.monotonic() - started


def _assert_whole_files(db_path: Path) -> int:
    try:
        declared, stored, orphans = files_and_rows(db_path)
    except sqlite3.OperationalError as exc:  # killed before the schema was created: nothing stored
        assert "no such table" in str(exc)
        return 0
    assert orphans == 0 and declared == stored, (declared, stored)
    return len(declared)


def test_kill_9_during_ingest_keeps_each_file_whole_and_a_rerun_completes(many_files, tmp_path):
    reference, results, duration = many_files
    expected = state(reference.db_path)
    rng = random.Random(745)
    kills = [("first file in", signal.SIGKILL), *((rng.uniform(0.3, 1.0) * duration, signal.SIGKILL) for _ in "ab"),
             ("first file in", signal.SIGINT)]  # SIGKILL while a later file's transaction is open, at random, Ctrl-C
    partial = 0
    for n, (when, signum) in enumerate(kills):
        trial = Project(reference.workdir, f"sqlite:///{tmp_path / f'trial-{n}.sqlite'}")
        proc = trial.start("ingest", str(results), "--sidecar", str(reference.sidecar))
        if when == "first file in":
            wait_for(lambda: count_files(trial.db_path) >= 1, proc, 120)
        else:
            time.sleep(when)
        proc.send_signal(signum)
        code = proc.wait(timeout=60)
        assert code == (-9 if signum == signal.SIGKILL else 130) or code == 0
        kept = _assert_whole_files(trial.db_path) if trial.db_path.exists() else 0
        partial += 0 < kept < FILES
        if when == "first file in":  # (the bulk writes are quick: the signal may land after the last one)
            assert 1 <= kept <= FILES
        rerun = trial.cli("ingest", str(results), "--sidecar", str(reference.sidecar))
        assert rerun.returncode == 0, rerun.stderr
        assert f"{kept} file(s) already known" in rerun.stderr
        assert state(trial.db_path) == expected
    assert partial >= 1  # at least one signal landed between two files


def test_bad_results_files_are_refused_one_line_each_and_the_rest_goes_in(faulty_run, tmp_path):
    project, _ = faulty_run
    source = results_file(project)
    text = source.read_text()
    data = json.loads(text)
    folder = tmp_path / "results" / source.parent.name
    folder.mkdir(parents=True)
    good_name, good = variant_of(data, "ab" * 20)
    (folder / good_name).write_text(json.dumps(good))
    problems = {
        "truncated.json": (text[: len(text) // 2], "not valid JSON"),
        "not-json.json": ("results, but not as JSON\n", "not valid JSON"),
        "newer-version.json": (json.dumps({**data, "version": 3}), "asv results format version '3' is not supported"),
        "nan-sample.json": (with_nan(data, "samples"), "raw sample: nan is not a valid measurement"),
        "nan-duration.json": (with_nan(data, "duration"), "duration: nan is not a valid measurement"),
        "wrong-parameters.json": (with_wrong_parameters(data), "3 parameter list(s), its label names 2"),
    }
    for name, (content, _) in problems.items():
        (folder / name).write_text(content)
    completed = project.cli("ingest", str(tmp_path / "results"), "--sidecar", str(project.sidecar))
    assert completed.returncode == 2
    refused = [line for line in completed.stderr.splitlines() if line.startswith("proofbench: refused ")]
    assert len(refused) == len(problems)
    for name, (_, message) in problems.items():
        (line,) = [line for line in refused if str(folder / name) in line]
        assert message in line
    assert "ingested 1 file(s) holding 27 result(s)" in completed.stderr




# -- bad declarations and inputs ---------------------------------------------------------

DECLARATIONS = ROOT / "tests" / "faulty" / "declarations"


@pytest.mark.parametrize("module, message", [
    ("bad_area", "subject Cooking-Pot.stew: area must match"),
    ("mismatched_signature", "subject loading.mismatched: variant 'optimized' takes 2 positional argument(s)"),
    ("duplicate_name", "subject loading.twice: registered twice (names must be unique)"),
], ids=["bad-area", "variants-disagree", "duplicate-name"])
def test_a_bad_declaration_is_one_line_naming_its_file_and_line(tmp_path, module, message):
    bad = Project(tmp_path / "work", "sqlite://", subjects=f"tests.faulty.declarations.{module}")
    completed = bad.cli("generate", "--check", db=False)
    assert completed.returncode == 2
    line = _one_line_error(completed)
    path = DECLARATIONS / f"{module}.py"
    assert line.startswith(f"proofbench: {path}:") and line.endswith(message + line.split(message, 1)[1])
    number = int(line.removeprefix(f"proofbench: {path}:").split(":", 1)[0])
    assert "the error" in path.read_text().splitlines()[number - 1]


@pytest.mark.parametrize("args, env, message", [
    (("generate", "--check"), {"subjects": "tests.faulty.declarations.missing"},
     "subject module 'tests.faulty.declarations.missing' cannot be imported: ModuleNotFoundError"),
    (("run", "--profile", "nosuch", "--no-report"), {}, "unknown profile 'nosuch'; expected one of smoke, quick"),
    (("run", "--profile", "smoke", "--no-report"), {"PROOFBENCH_MEMORY_LIMIT": "lots"},
     "PROOFBENCH_MEMORY_LIMIT='lots': expected a positive number of bytes"),
], ids=["unknown-module", "unknown-profile", "bad-memory-limit"])
def test_a_bad_setting_is_one_line(tmp_path, args, env, message):
    env = dict(env)
    subjects = env.pop("subjects", None)
    project = Project(tmp_path / "work", f"sqlite:///{tmp_path / 'db.sqlite'}", *([subjects] if subjects else []))
    if "smoke" in args:
        project.generate()  # a run that gets as far as asv needs the benchmark module
    completed = project.cli(*args, db=args[0] != "generate", **env)
    assert completed.returncode == 2
    assert message in _one_line_error(completed)


def test_an_unreachable_database_is_one_line_with_the_password_masked(tmp_path):
    project = Project(tmp_path / "work", "postgresql+psycopg://bench:s3cret-pass@127.0.0.1:1/proofbench")
    completed = project.cli("db", "upgrade")
    assert completed.returncode == 2
    line = _one_line_error(completed)
    assert "cannot reach database postgresql+psycopg://bench:***@127.0.0.1:1/proofbench" in line
    assert "s3cret-pass" not in completed.stderr + completed.stdout


def test_a_database_path_that_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "a-file").write_text("")
    project = Project(tmp_path / "work", f"sqlite:///{tmp_path / 'a-file' / 'db.sqlite'}")
    completed = project.cli("db", "upgrade")
    assert completed.returncode == 2 and str(tmp_path / "a-file") in _one_line_error(completed)


INPUTS = ROOT / "tests" / "faulty" / "inputs"


def test_malformed_input_files_are_one_line_naming_file_and_line(tmp_path):
    from proofbench.claim import load_claims
    from proofbench.errors import InputError
    from proofbench.profile import load_profiles
    from proofbench.subjects.workloads.fasta import read_fasta
    from proofbench.subjects.workloads.lmdb_store import open_environment

    (tmp_path / "corrupt.lmdb").mkdir()
    (tmp_path / "corrupt.lmdb" / "data.mdb").write_bytes(b"not an LMDB file" * 64)
    cases = [
        (lambda: load_claims(INPUTS / "bad_claims.toml"), f"{INPUTS / 'bad_claims.toml'}: not valid TOML", "line 3"),
        (lambda: load_profiles(INPUTS / "bad_profiles.toml"), f"{INPUTS / 'bad_profiles.toml'}: not valid TOML",
         "line 6"),
        (lambda: list(read_fasta(INPUTS / "broken.fasta")), f"{INPUTS / 'broken.fasta'}:5: column 4", "'4'"),
        (lambda: open_environment(tmp_path / "missing.lmdb"), f"{tmp_path / 'missing.lmdb'}: no such LMDB store", ""),
        (lambda: open_environment(tmp_path / "corrupt.lmdb"), f"{tmp_path / 'corrupt.lmdb'}: data.mdb is not a valid",
         "MDB_INVALID"),
    ]
    for action, start, detail in cases:
        with pytest.raises(InputError) as err:
            action()
        message = str(err.value)
        assert message.startswith(start) and detail in message and "\n" not in message


def test_the_report_escapes_data_and_writes_only_inside_its_directory(tmp_path):
    url = f"sqlite:///{tmp_path / 'hostile.sqlite'}"
    hostile_database(url)
    out = tmp_path / "a" / "b" / "site"
    project = Project(tmp_path / "work", url)
    project.make()
    before = {p for p in tmp_path.rglob("*")}
    completed = project.cli("report", "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    written = {p for p in tmp_path.rglob("*")} - before - set(out.parents) - set(tmp_path.glob("hostile.sqlite*"))
    assert written and all(p.is_relative_to(out) for p in written), sorted(written)
    assert not list(Path("/").glob("escaped-*")) and not list(tmp_path.glob("**/escaped-*"))
    pages = [p.read_text() for p in out.rglob("*.html")]
    assert pages and not any("<script>alert(1)" in page for page in pages)
    assert any("&lt;script&gt;alert(1)&lt;/script&gt;" in page for page in pages)


# -- reading asv's output: what the kernel or asv did to a benchmark ----------------------

def _log(*stderr: str, name: str = "loading.FaultyVariants.time_call") -> str:
    lines = [f"[ 50.00%] ··· {name}                    failed", "[ 50.00%] ··· ========== ======="]
    first, *rest = "\n".join(stderr).splitlines()
    return "\n".join(lines + [f"[ 50.00%] ···· {first}"] + [" " * 15 + line for line in rest]) + "\n"


def test_asv_output_becomes_failure_reasons():
    from proofbench.pipeline.asv_log import from_asv_log

    log = _log("For parameters: 'hangs', 'tiny'", "", "asv: benchmark timed out (timeout 2.0s)", "",
               "For parameters: 'raises', 'tiny'", "Traceback (most recent call last):", '  File "x.py", line 1',
               "proofbench.errors.InputError: x.fasta:3: bad", "asv: benchmark failed (exit status -9)")
    records = {(r.params, r.reason) for r in from_asv_log(log, "c" * 40)}
    assert records == {(("hangs", "tiny"), "timeout after 2 s"), (("raises", "tiny"), "InputError: x.fasta:3: bad"),
                       ((), "killed by signal 9 (SIGKILL)")}
    assert all(r.benchmark == "loading.FaultyVariants" and r.details == {"method": "time_call", "source": "asv"}
               for r in from_asv_log(log, "c" * 40))


def test_a_failed_setup_cache_is_the_reason_of_every_benchmark_it_served():
    from proofbench.pipeline.asv_log import from_asv_log

    log = ("[11.11%] ··· Setting up loading:106                                      failed\n"
           "[11.11%] ···· Traceback (most recent call last):\n"
           "               File \"x.py\", line 1\n"
           "              OSError: disk full\n"
           "              asv: setup_cache failed (exit status 1)\n"
           "[11.11%] ··· loading.FaultyInput.time_call skipped (setup_cache failed)\n"
           "[22.22%] ··· loading.FaultyInput.track_items skipped (setup_cache failed)\n")
    records = from_asv_log(log, "c" * 40)
    assert [(r.details["method"], r.params, r.reason) for r in records] == [
        ("time_call", (), "setup_cache: OSError: disk full"), ("track_items", (), "setup_cache: OSError: disk full")]


@pytest.mark.parametrize("stderr, oom_kills, reason", [
    (["asv: benchmark failed (exit status -9)"], 1, "killed: out of memory"),
    (["asv: benchmark failed (exit status -9)"], 0, "killed by signal 9 (SIGKILL)"),
    (["asv: benchmark failed (exit status 137)"], 1, "killed: out of memory"),
    (["asv: benchmark failed (exit status -11)"], 1, "killed by signal 11 (SIGSEGV)"),
    (["For parameters: 'exhausts', 'tiny'", "terminate called after throwing an instance of 'std::bad_alloc'",
      "asv: benchmark failed (exit status -6)"], 0, "killed: out of memory"),
], ids=["sigkill-by-oom-killer", "sigkill-by-someone", "status-137-by-oom-killer", "sigsegv", "bad-alloc-abort"])
def test_a_killed_benchmark_is_out_of_memory_only_when_the_kernel_or_its_allocation_says_so(stderr, oom_kills, reason):
    from proofbench.pipeline.asv_log import from_asv_log

    assert reason in {r.reason for r in from_asv_log(_log(*stderr), "c" * 40, oom_kills=oom_kills)}


def test_two_kills_are_not_both_blamed_on_one_oom_kill():
    from proofbench.pipeline.asv_log import from_asv_log

    log = _log("asv: benchmark failed (exit status -9)") + _log("asv: benchmark failed (exit status -9)",
                                                                name="loading.FaultyVariants.track_speedup")
    assert {r.reason for r in from_asv_log(log, "c" * 40, oom_kills=1)} == {"killed by signal 9 (SIGKILL)"}


@pytest.mark.parametrize("listing, counter, text, expected", [
    ("0::/bench\n", "bench/memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n", 2),
    ("4:memory:/bench\n0::/\n", "memory/bench/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n", 5),
    ("0::/bench\n", "elsewhere/memory.events", "oom_kill 1\n", None),
], ids=["cgroup-v2", "cgroup-v1", "unreadable"])
def test_oom_kills_are_read_from_the_memory_cgroup(tmp_path, listing, counter, text, expected):
    from proofbench.pipeline.runner import oom_kills

    (tmp_path / "cgroup").write_text(listing)
    (tmp_path / "fs" / counter).parent.mkdir(parents=True)
    (tmp_path / "fs" / counter).write_text(text)
    assert oom_kills(tmp_path / "cgroup", tmp_path / "fs") == expected


def test_the_memory_limit_setting_and_out_of_memory_reasons():
    from proofbench.errors import InputError
    from proofbench.measure.bench import failure_reason, memory_limit

    assert (memory_limit("256M"), memory_limit("2G"), memory_limit("4096"), memory_limit(None)) == \
        (256 << 20, 2 << 30, 4096, None)
    with pytest.raises(InputError, match="PROOFBENCH_MEMORY_LIMIT='-1'"):
        memory_limit("-1")
    assert failure_reason(ValueError("bad")) == "ValueError: bad"
    assert failure_reason(MemoryError()) == "out of memory: MemoryError"
    assert failure_reason(RuntimeError("DefaultCPUAllocator: can't allocate memory")).startswith("out of memory: ")


def _printing(lines: int):
    def handle(args) -> int:
        for i in range(lines):
            print(f"line {i} of a long report")
        return 0
    return handle


@pytest.mark.parametrize("lines", [10, 100_000])  # within the buffer (written at the end), and beyond it
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly_as_sigpipe_would(monkeypatch, capsys, lines):
    """`proofbench check | head -1`: the reader goes, and the command ends with 141 (128 +
    SIGPIPE, what a shell shows for a tool the signal ended), with nothing on stderr; not an
    internal error, nor Python's complaint at exit when the output fit the buffer."""
    import os
    import sys

    from proofbench import cli
    from proofbench.cli import table

    read, write = os.pipe()
    os.close(read)  # the reader has gone before anything is written
    monkeypatch.setattr(table, "handle", _printing(lines))
    saved = os.dup(1)
    try:
        os.dup2(write, 1)
        monkeypatch.setattr(sys, "stdout", os.fdopen(1, "w", buffering=1 << 16, closefd=False))
        code = cli.main(["table"])
        sys.stdout.flush()  # standard output now writes nowhere: Python's own flush at exit cannot fail
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(write)
    assert code == 141 and "proofbench" not in capsys.readouterr().err


def test_a_broken_pipe_that_is_not_standard_output_is_an_internal_error(monkeypatch, capsys):
    from proofbench import cli
    from proofbench.cli import table

    def handle(args) -> int:
        raise BrokenPipeError(32, "Broken pipe")  # a child process's pipe, say

    monkeypatch.setattr(table, "handle", handle)
    code = cli.main(["table"])
    assert code == 3 and "internal error: BrokenPipeError" in capsys.readouterr().err
