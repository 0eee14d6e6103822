"""Hostile and broken declarations: claims, profiles, the project file, the files they name, and
environment variables. Each is refused in one line naming the file, the entry and the key, exit 2,
before anything is written.
"""
from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import REPO, make_project
from hostile import cli, one_line
from test_declarations import CLAIM as DECLARED_CLAIM
from test_hostile import git_project

# -- claims, profiles and the project file ---------------------------------------------

CLAIM = DECLARED_CLAIM.replace("low = 5.0", "low = 2.0\nhigh = 3.0")
MEMORY = CLAIM.replace('kind = "speedup"', 'kind = "memory_reduction"').replace(
    'metric = "time"', 'metric = "peak_memory"').replace("low = 2.0\nhigh = 3.0", "low = 0.3\nhigh = 0.5")
BAD_CLAIMS = {  # claims file -> what the one line says after the file and the claim
    "low-true": (CLAIM.replace("low = 2.0", "low = true"), "key 'low' must be a number (finite; true is not one), "
                 "got True"),
    "low-nan": (CLAIM.replace("low = 2.0", "low = nan"), "key 'low' must be a number (finite; true is not one), "
                "got nan"),
    "high-inf": (CLAIM.replace("high = 3.0", "high = inf"), "key 'high' must be a number"),
    "low-huge-integer": (CLAIM.replace("low = 2.0", "low = " + "9" * 400), "got an integer of 400 digits"),
    "zero-speedup": (CLAIM.replace("low = 2.0", "low = 0"), "key 'low' is a speedup factor and must be above 0"),
    "negative-speedup": (CLAIM.replace("low = 2.0", "low = -2.0"), "must be above 0, got -2.0"),
    "negative-rate": (CLAIM.replace('kind = "speedup"', 'kind = "throughput"').replace('"time"', '"items"')
                      .replace("low = 2.0", "low = -5"), "key 'low' is a rate in items/s and must be above 0"),
    "150%-less-memory": (MEMORY.replace("high = 0.5", "high = 1.5"), "key 'high' is a fraction of memory saved, "
                         "above 0 and below 1 (0.3 = 30% less), got 1.5"),
    "100%-less-memory": (MEMORY.replace("low = 0.3", "low = 1.0").replace("high = 0.5", "high = 1.0"),
                         "key 'low' is a fraction of memory saved"),
    "percent-not-fraction": (MEMORY.replace("low = 0.3", "low = 30").replace("high = 0.5", "high = 50"), "got 30"),
    "high-below-low": (CLAIM.replace("high = 3.0", "high = 1.5"), "key 'high' (1.5) is below 'low' (2)"),
    "quality-with-figure": (CLAIM.replace('kind = "speedup"', 'kind = "quality"'),
                            "a quality claim carries no figure"),
    "unknown-subject": (CLAIM.replace('subject = "loading.lmdb_read"', 'subject = "loading.nope"'),
                        "unknown subject 'loading.nope'"),
    "unknown-variant": (CLAIM.replace('variant = "optimized"', 'variant = "turbo"'),
                        "subject loading.lmdb_read has no variant 'turbo'"),
    "baseline-speedup": (CLAIM.replace('variant = "optimized"', 'variant = "baseline"'),
                         "a speedup claim is about a variant against the baseline, and 'baseline' is the baseline "
                         "itself; expected one of "),
    "unknown-metric": (CLAIM.replace('metric = "time"', 'metric = "latency"'),
                       "key 'metric' 'latency' is not measured by loading.lmdb_read for a speedup claim; "
                       "expected time"),
    "untracked-memory": (MEMORY.replace("loading.lmdb_read", "loading.fasta_to_lmdb"),
                         "key 'metric' 'peak_memory' is not measured by loading.fasta_to_lmdb"),
    "stray-claims-table": (CLAIM + CLAIM.replace("[[claim]]", "[[claims]]"), "unknown top-level key 'claims'"),
    "not-a-table": ("claim = [1, 2]\n", "claim #1: must be a table ([[claim]]), got int"),
    "note-not-text": (CLAIM + "note = 5\n", "key 'note' must be a string"),
    "long-id": (CLAIM.replace('id = "a"', f'id = "{"x" * 300}"'), "key 'id' has 300 characters; at most 200"),
    "deeply-nested": (CLAIM + "note = " + "[" * 50_000 + "]" * 50_000 + "\n", "not valid TOML: nested too deeply"),
    "huge-integer-literal": (CLAIM.replace("low = 2.0", "low = " + "9" * 5000), "not valid TOML: Exceeds the limit"),
    "not-utf8": (CLAIM.replace("5x faster", "5x f\udcffaster"), "not valid TOML: not UTF-8 text"),
}


def _project_with(tmp_path: Path, **files: str | bytes) -> Path:
    project = make_project(tmp_path / "project")
    keys = "".join(f'{key} = "{key}.toml"\n' for key in files)
    (project / "proofbench.toml").write_text(f'subjects = ["proofbench.subjects.loading"]\n{keys}')
    for key, text in files.items():
        path = project / f"{key}.toml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
    return project


@pytest.mark.parametrize("case", BAD_CLAIMS, ids=BAD_CLAIMS)
def test_a_bad_claim_is_one_line_naming_file_claim_and_key(capsys, tmp_path, case):
    text, message = BAD_CLAIMS[case]
    project = _project_with(tmp_path, claims=text)
    code, _, err = cli(capsys, "generate", "--check", "--project", str(project))
    line = one_line(err)
    assert code == 2 and line.startswith(f"proofbench: {project / 'claims.toml'}: ") and message in line, line
    if "claim" in text and case not in ("stray-claims-table", "deeply-nested", "huge-integer-literal", "not-utf8"):
        assert "claim #1" in line or "claim '" in line  # which claim


def test_the_seed_claims_pass_every_rule(capsys):
    code, _, err = cli(capsys, "generate", "--check", "--project", str(REPO))
    assert code == 0, err


PROFILE = """[mine]
description = "one line"
device = "cpu"
threads = 1
sizes = ["tiny"]
rounds = 1
repeat = [3, 5, 1.0]
warmup_time = 0.0
"""
BAD_PROFILES = {
    "threads-true": (PROFILE.replace("threads = 1", "threads = true"), "[mine].threads has the wrong type (bool)"),
    "threads-100000": (PROFILE.replace("threads = 1", "threads = 100000"),
                       "threads must be a whole number from 0 to 1024, got 100000"),
    "threads-negative": (PROFILE.replace("threads = 1", "threads = -1"), "threads must be a whole number"),
    "threads-float": (PROFILE.replace("threads = 1", "threads = 1.5"), "[mine].threads has the wrong type (float)"),
    "warmup-negative": (PROFILE.replace("warmup_time = 0.0", "warmup_time = -1.0"),
                        "warmup_time must be a number of seconds at least 0"),
    "warmup-nan": (PROFILE.replace("warmup_time = 0.0", "warmup_time = nan"), "warmup_time must be a number"),
    "warmup-inf": (PROFILE.replace("warmup_time = 0.0", "warmup_time = inf"), "got inf"),
    "warmup-true": (PROFILE.replace("warmup_time = 0.0", "warmup_time = true"), "[mine].warmup_time has the wrong"),
    "repeat-negative-seconds": (PROFILE.replace("[3, 5, 1.0]", "[3, 5, -1.0]"),
                                "repeat[2] (max seconds) must be a number of seconds above 0"),
    "repeat-zero-seconds": (PROFILE.replace("[3, 5, 1.0]", "[3, 5, 0]"), "repeat[2] (max seconds)"),
    "repeat-text": (PROFILE.replace("[3, 5, 1.0]", '["a", 5, 1.0]'), "repeat[0] (min samples) must be a whole"),
    "repeat-true": (PROFILE.replace("[3, 5, 1.0]", "[true, 5, 1.0]"), "got True"),
    "repeat-min-above-max": (PROFILE.replace("[3, 5, 1.0]", "[6, 5, 1.0]"), "repeat[1] (max samples) must be a "
                             "whole number from 6"),
    "rounds-zero": (PROFILE.replace("rounds = 1", "rounds = 0"), "rounds must be a whole number from 1 to 1000"),
    "processes-zero": (PROFILE + "processes = 0\n", "processes must be a whole number from 1 to 16, got 0"),
    "processes-text": (PROFILE + 'processes = "two"\n', "[mine].processes has the wrong type (str)"),
    "sizes-twice": (PROFILE.replace('["tiny"]', '["tiny", "tiny"]'), "sizes must be distinct names"),
    "sizes-numbers": (PROFILE.replace('["tiny"]', "[1]"), "sizes must be distinct names among tiny, small, large"),
    "description-newline": (PROFILE.replace('"one line"', '"""two\nlines"""'), "description must be one line"),
    "bench-not-a-regex": (PROFILE + 'bench = "("\n', "bench '(' is not a regular expression"),
    "name-with-a-space": (PROFILE.replace("[mine]", '["my profile"]'), "profile 'my profile': a name is 1-50"),
    "name-too-long": (PROFILE.replace("[mine]", f"[{'p' * 51}]"), "a name is 1-50 letters"),
    "unknown-key": (PROFILE + "colour = 1\n", "[mine] has unknown key(s) colour"),
    "deeply-nested": (PROFILE + "x = " + "[" * 50_000 + "]" * 50_000 + "\n", "not valid TOML: nested too deeply"),
    "precision-zero-integer": (PROFILE + "precision = 0\n", "precision must be a fraction between 0 and 1, e.g. 0.05, "
                               "got 0.0"),
    "precision-text": (PROFILE + 'precision = "fine"\n', "[mine].precision has the wrong type (str): 'fine'; "
                       "expected a number"),
    "threads-float-expected": (PROFILE.replace("threads = 1", "threads = 1.5"),
                               "[mine].threads has the wrong type (float): 1.5; expected a whole number"),
    "warmup-huge-integer": (PROFILE.replace("warmup_time = 0.0", "warmup_time = " + "9" * 400),
                            "[mine].warmup_time is too large, got an integer of 400 digits"),
    "pair-budget-huge-integer": (PROFILE + "pair_budget = " + "9" * 400 + "\n",
                                 "[mine].pair_budget is too large, got an integer of 400 digits"),
    "budget-huge-integer": (PROFILE + "[mine.budgets]\n\"loading.lmdb_read\" = " + "9" * 400 + "\n",
                            "[mine].budgets.loading.lmdb_read is too large, got an integer of 400 digits"),
    "repeat-huge-seconds": (PROFILE.replace("[3, 5, 1.0]", "[3, 5, " + "9" * 401 + "]"),
                            "repeat[2] (max seconds) must be a number of seconds above 0 and at most"),
    "sizes-text": (PROFILE.replace('["tiny"]', '"tiny"'), "[mine].sizes has the wrong type (str): 'tiny'; expected an "
                   "array"),
}


@pytest.mark.parametrize("case", BAD_PROFILES, ids=BAD_PROFILES)
def test_a_bad_profile_is_one_line_naming_file_profile_and_key(capsys, tmp_path, case):
    text, message = BAD_PROFILES[case]
    project = _project_with(tmp_path, profiles=text)
    db = tmp_path / "db.sqlite"
    code, _, err = cli(capsys, "run", "--profile", "mine", "--project", str(project), "--db", f"sqlite:///{db}")
    line = one_line(err)
    assert code == 2 and line.startswith(f"proofbench: {project / 'profiles.toml'}: ") and message in line, line
    assert not db.exists() and not (project / "benchmarks").exists()  # refused before anything was written


def test_the_builtin_profiles_pass_every_rule():
    from proofbench.profile import profiles

    assert set(profiles()) >= {"smoke", "quick", "full", "gpu"}


def test_every_number_key_of_a_profile_takes_an_integer(tmp_path):
    from proofbench.profile import load_profiles

    path = tmp_path / "profiles.toml"
    path.write_text(PROFILE.replace("warmup_time = 0.0", "warmup_time = 0") + "pair_budget = 4\nblock_seconds = 1\n"
                    "pair_warmup = 0\nbetween_runs = 0\nno_difference = 0\ndata_span = 0\n")
    mine = load_profiles(path)["mine"]
    numbers = (mine.warmup_time, mine.pair_budget, mine.block_seconds, mine.pair_warmup, mine.between_runs,
               mine.no_difference, mine.data_span)
    assert numbers == (0, 4, 1, 0, 0, 0, 0) and all(type(n) is float for n in numbers)


@pytest.mark.parametrize("command", ["run", "history", "gate"])
def test_the_profile_option_lists_every_builtin_profile_from_its_file(capsys, command):
    from proofbench.cli import main
    from proofbench.profile import DEFAULT, PROFILES_FILE

    names = list(tomllib.loads(PROFILES_FILE.read_text()))
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse folds long help lines
    listed = ", ".join(f"{name} (default)" if name == DEFAULT else name for name in names)
    assert done.value.code == 0 and {"pipelines", "esm650m"} <= set(names)
    assert f"--profile PROFILE {listed}, or one of the project's" in shown, shown


BAD_PROJECTS = {  # proofbench.toml (or pyproject.toml) -> the one line
    "tool-not-a-table": ("pyproject.toml", 'tool = "proofbench"\n', "no proofbench.toml"),
    "tool-proofbench-not-a-table": ("pyproject.toml", "[tool]\nproofbench = 3\n", "[tool.proofbench] must be a table"),
    "deeply-nested": ("proofbench.toml", "subjects = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply"),
    "not-utf8": ("proofbench.toml", b'subjects = ["\xff"]\n', "not valid TOML: not UTF-8 text (byte 13)"),
    "subjects-not-modules": ("proofbench.toml", 'subjects = ["../evil"]\n', "subjects must be a non-empty list"),
    "path-with-nul": ("proofbench.toml", 'subjects = ["a"]\nsite = "a\\u0000b"\n', "site must be a path"),
    "database-not-text": ("proofbench.toml", 'subjects = ["a"]\ndatabase = 5\n', "database must be a database URL"),
    "min-step-nan": ("proofbench.toml", 'subjects = ["a"]\n[check]\nmin_step = nan\n', "check.min_step must be"),
    "significance-true": ("proofbench.toml", 'subjects = ["a"]\n[check]\nsignificance = true\n',
                          "check.significance must be a probability"),
    "unknown-key": ("proofbench.toml", 'subjects = ["a"]\nsubject = ["b"]\n', "unknown key 'subject'"),
    "suspect-from-zero": ("proofbench.toml", 'subjects = ["a"]\n[check]\nsuspect_from = 0\n',
                          "check.suspect_from must be a positive number of standard errors"),
    "rule-suspect-from-text": ("proofbench.toml",
                               'subjects = ["a"]\n[[check.rule]]\npattern = "a*"\nsuspect_from = "high"\n',
                               "[[check.rule]] #1: suspect_from must be a positive number"),
}


@pytest.mark.parametrize("case", BAD_PROJECTS, ids=BAD_PROJECTS)
def test_a_bad_project_file_is_one_line_naming_it(capsys, tmp_path, case):
    name, text, message = BAD_PROJECTS[case]
    (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    code, _, err = cli(capsys, "generate", "--check", "--project", str(tmp_path))
    line = one_line(err)
    assert code == 2 and message in line and (str(tmp_path / name) in line or "no proofbench.toml" in line), line


BROKEN_SUBJECTS = {  # the subjects module's text (None: no such module) -> why, after "cannot be imported: "
    "exits-0": ("import sys\nsys.exit(0)\n", "{file}:2: SystemExit: 0"),
    "exits-3": ("import sys\nsys.exit(3)\n", "{file}:2: SystemExit: 3"),
    "exits-with-text": ("import sys\nsys.exit('bye')\n", "{file}:2: SystemExit: bye"),
    "exits-bare": ("raise SystemExit\n", "{file}:1: SystemExit"),
    "name-error": ("x = 1\nraise_me = undefined_name\n", "{file}:2: NameError: name 'undefined_name' is not defined"),
    "syntax-error": ("x = 1\ndef broken(:\n", "{file}:2: SyntaxError: invalid syntax"),
    "missing": (None, "ModuleNotFoundError: No module named {module!r}"),
}


@pytest.mark.parametrize("case", BROKEN_SUBJECTS, ids=BROKEN_SUBJECTS)
def test_a_subjects_module_that_cannot_be_imported_is_one_line_naming_project_file_and_key(capsys, monkeypatch,
                                                                                            tmp_path, case):
    text, why = BROKEN_SUBJECTS[case]
    module = "broken_subjects_" + case.replace("-", "_")  # a name of its own: nothing of it stays imported
    project = make_project(tmp_path / "project", module).resolve()
    if text is not None:
        (project / f"{module}.py").write_text(text)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the project's directory is put on it
    code, _, err = cli(capsys, "generate", "--check", "--project", str(project))
    expected = (f"proofbench: {project / 'proofbench.toml'}: subjects: subject module {module!r} cannot be imported: "
                + why.format(file=project / f"{module}.py", module=module))
    assert (code, one_line(err)) == (2, expected)
    assert not (project / "benchmarks").exists()  # refused before the suite was written


@pytest.mark.parametrize("init, why", [("undefined_name\n", "NameError: name 'undefined_name' is not defined"),
                                       ("import sys\nsys.exit(7)\n", "SystemExit: 7")], ids=["raises", "exits"])
def test_a_subjects_module_whose_package_raises_is_one_line_naming_the_package_file(capsys, monkeypatch, tmp_path,
                                                                                  init, why):
    # finding the module's file to name the line ran the broken package's __init__ again, and
    # what it raised escaped: "a bug in proofbench" (exit 3), or its own exit status
    package = "broken_package_" + ("raises" if "Name" in why else "exits")
    project = make_project(tmp_path / "project", f"{package}.subjects").resolve()
    (project / package).mkdir()
    (project / package / "__init__.py").write_text(init)
    (project / package / "subjects.py").write_text("")
    monkeypatch.setattr(sys, "path", list(sys.path))
    code, _, err = cli(capsys, "generate", "--check", "--project", str(project))
    line = one_line(err)
    assert code == 2 and line.endswith(f"cannot be imported: {project / package / '__init__.py'}:"
                                       f"{init.count(chr(10))}: {why}"), line


def test_a_subjects_module_named_in_pyproject_is_refused_naming_its_table(capsys, monkeypatch, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.proofbench]\nsubjects = ["broken_subjects_from_pyproject"]\n')
    monkeypatch.setattr(sys, "path", list(sys.path))
    code, _, err = cli(capsys, "generate", "--check", "--project", str(tmp_path))
    assert code == 2 and one_line(err).startswith(f"proofbench: {tmp_path.resolve() / 'pyproject.toml'}: "
                                                  f"[tool.proofbench].subjects: subject module "
                                                  f"'broken_subjects_from_pyproject' cannot be imported: "), err


def test_a_subjects_module_interrupted_while_imported_is_an_interrupt(capsys, monkeypatch, tmp_path):
    project = make_project(tmp_path / "project", "interrupted_subjects").resolve()
    (project / "interrupted_subjects.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    code, _, err = cli(capsys, "generate", "--check", "--project", str(project))
    assert code == 130 and "interrupted" in one_line(err)


@pytest.mark.parametrize("argv", [("alerts", "list"), ("report",)])
def test_a_working_directory_too_long_for_the_system_is_one_line(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.delenv("PROOFBENCH_PROJECT", raising=False)
    monkeypatch.delenv("PROOFBENCH_DB", raising=False)
    monkeypatch.chdir(tmp_path)  # and back at the end
    for _ in range(20):  # 20 x 251 characters, past Linux's 4096: made and entered one step at a time
        os.mkdir("d" * 250)
        os.chdir("d" * 250)
    code, _, err = cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and line.startswith(f"proofbench: {str(tmp_path.resolve())[:40]}"), line
    assert f"{'d' * 40}/proofbench.toml: the path is too long for this system (" in line and len(line) < 250, line


@pytest.mark.parametrize("key", ["claims", "profiles"])
@pytest.mark.parametrize("kind", ["directory", "fifo", "missing", "too-large"])
def test_a_claims_or_profiles_path_that_is_no_readable_file_is_one_line(capsys, tmp_path, key, kind):
    from proofbench.tomlfile import MAX_BYTES

    project = _project_with(tmp_path, **{key: ""})
    path = project / f"{key}.toml"
    path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # read, it would wait for a writer forever
    elif kind == "too-large":
        with path.open("wb") as fh:
            fh.truncate(MAX_BYTES + 1)
    code, _, err = cli(capsys, "run", "--profile", "mine" if key == "profiles" else "smoke", "--project",
                        str(project), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}")
    expected = {"directory": "is not a regular file", "fifo": "is not a regular file", "missing": "not found",
                "too-large": f"has {MAX_BYTES + 1} bytes; at most {MAX_BYTES} are read"}[kind]
    assert code == 2 and f"proofbench: {path}: {key} file {expected}" == one_line(err)
    assert not (tmp_path / "db.sqlite").exists()


# -- environment variables and the sidecar ------------------------------------------------

@pytest.mark.parametrize("variable, value, message", [
    ("PROOFBENCH_MEMORY_LIMIT", "lots", "PROOFBENCH_MEMORY_LIMIT='lots': expected a positive number of bytes"),
    ("PROOFBENCH_MEMORY_LIMIT", "0", "PROOFBENCH_MEMORY_LIMIT='0'"),
    ("PROOFBENCH_MEMORY_LIMIT", "-1G", "PROOFBENCH_MEMORY_LIMIT='-1G'"),
    ("PROOFBENCH_MEMORY_LIMIT", "9" * 5000, "expected a positive number of bytes up to 1 PiB"),
    ("PROOFBENCH_MEMORY_LIMIT", "99999999999999G", "up to 1 PiB"),  # setrlimit would overflow a C long
    ("PROOFBENCH_MEMORY_LIMIT", "\u0661\u0662M", "expected a positive number"),  # digits, but not ASCII ones
    ("PROOFBENCH_PROFILE", "nosuch", "unknown profile 'nosuch'; expected one of smoke, quick, full, gpu"),
    ("PROOFBENCH_PROFILE", "../../etc/passwd", "unknown profile '../../etc/passwd'"),
    ("PROOFBENCH_PROFILES", "/nonexistent/profiles.toml", "/nonexistent/profiles.toml: profiles file not found"),
    ("PROOFBENCH_PROJECT", "/nonexistent/project", "no proofbench.toml (or [tool.proofbench] in pyproject.toml) "
     "in /nonexistent/project"),
])
def test_an_odd_environment_variable_is_one_line_before_anything_runs(capsys, monkeypatch, tmp_path, variable, value,
                                                                      message):
    from proofbench.pipeline import runner

    project = git_project(tmp_path)
    monkeypatch.chdir(project if variable != "PROOFBENCH_PROJECT" else tmp_path)
    monkeypatch.setenv(variable, value)
    monkeypatch.setattr(runner, "drive", lambda *a, **k: pytest.fail("asv was started"))
    db = tmp_path / "db.sqlite"
    argv = ["run", "--no-report", "--db", f"sqlite:///{db}"] + ([] if variable == "PROOFBENCH_PROFILE" else
                                                                ["--profile", "smoke"])
    code, _, err = cli(capsys, *argv)
    assert code == 2 and message in one_line(err)

