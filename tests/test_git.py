"""The one module that talks to git: values from files reach git as data, never as options."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from proofbench import git
from proofbench.errors import InputError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    env = {"GIT_AUTHOR_DATE": "2026-11-01T00:00:00+00:00", "GIT_COMMITTER_DATE": "2026-11-01T00:00:00+00:00",
           "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "Bench"],
                 ["config", "user.email", "b@example.invalid"], ["commit", "-q", "--allow-empty", "-m", "first"],
                 ["commit", "-q", "--allow-empty", "-m", "second"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, env=env, capture_output=True)
    return path


def test_history_head_and_metadata(repo):
    hashes = git.first_parent(repo, "main")
    assert len(hashes) == 2 and git.head(repo) == hashes[-1]
    info = git.commit_info(repo, hashes[0][:10])
    assert (info.hash, info.subject, info.author) == (hashes[0], "first", "Bench")
    assert git.rev_parse(repo, "HEAD~1") == hashes[0]
    assert git.commit_info(repo, "0" * 40) is None  # a hash the repository does not have


@pytest.mark.parametrize("value", ["--output=OUT", "-o", "HEAD", "abc", "0" * 65, "ABCDEF1", "1234567\n"])
def test_a_commit_hash_from_a_file_must_be_hex(repo, tmp_path, value):
    target = tmp_path / "written-by-git"
    with pytest.raises(InputError, match="not a commit hash"):
        git.commit_info(repo, value.replace("OUT", str(target)))
    assert not target.exists()


def test_a_revision_that_looks_like_an_option_is_only_a_revision(repo, tmp_path):
    target = tmp_path / "written-by-git"
    assert git.rev_parse(repo, f"--output={target}") is None
    with pytest.raises(InputError, match="cannot list"):
        git.first_parent(repo, f"--output={target}")
    assert not target.exists()


def test_not_a_checkout_is_one_line(tmp_path):
    with pytest.raises(InputError, match="not a git checkout"):
        git.head(tmp_path)


def test_git_says_how_it_read_a_since_date(repo):
    import datetime as dt

    assert git.date_read(repo, "2026-11-01 00:00 +0000") == dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    assert git.date_read(repo, "not a date") >= before  # what git cannot read it takes as now


def test_history_with_no_commits_since_a_date_says_how_git_read_it(repo):
    from proofbench.pipeline import history

    with pytest.raises(InputError) as raised:
        history.commits(repo, "main", since="notadate")
    assert "no commits in 'main' since 'notadate' (git reads it as " in str(raised.value)
    assert "give a date, YYYY-MM-DD, or git's '7 days ago'" in str(raised.value)
    with pytest.raises(InputError, match=r"^'HASHFILE: ' names no file \(expected HASHFILE:PATH, a file of commits"):
        history.commits(repo, "main", "HASHFILE: ")
    # a range or a date with nothing in it is a quiet week, not a failure: `history` says so and exits 0
    assert history.commits(repo, "main", "HEAD..HEAD") == ()
    assert history.commits(repo, "main", since="2026-11-02") == ()


def test_a_history_with_nothing_new_to_measure_says_so_and_passes(repo, capsys, monkeypatch):
    from proofbench import cli

    assert cli.main(["init", str(repo)]) == 0
    monkeypatch.chdir(repo)
    capsys.readouterr()
    assert cli.main(["history", "--since", "2026-11-02"]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert f"nothing to measure: {repo}: no commits in 'main' since '2026-11-02'" in said


@pytest.mark.parametrize("since, message", [
    ("2026-13-45", "--since '2026-13-45' is not a date (month must be in 1..12; expected YYYY-MM-DD)"),
    ("2026-02-30", "--since '2026-02-30' is not a date (day is out of range for month; expected YYYY-MM-DD)"),
    ("", "--since '' names no date (expected a date, YYYY-MM-DD, or git's '7 days ago')"),
])
def test_a_since_written_as_a_date_must_be_one(repo, since, message):
    # git reads 2026-13-45 as some other moment and '' as no bound, and the history measured the
    # whole branch without a word
    from proofbench.pipeline import history

    with pytest.raises(InputError) as raised:
        history.commits(repo, "main", since=since)
    assert str(raised.value) == message


def test_init_adds_what_proofbench_writes_to_gitignore_once(repo):
    from proofbench.pipeline.scaffold import init

    (repo / ".gitignore").write_text("*.pyc\n/.proofbench")  # no newline at its end; one entry named already
    done = {w.path.name: w for w in init(repo)}
    assert done[".gitignore"].added == (".asv/",)
    assert (repo / ".gitignore").read_text() == "*.pyc\n/.proofbench\n.asv/\n"
    again = {w.path.name: w for w in init(repo)}
    assert not again[".gitignore"].written and not again[".gitignore"].added
    (repo / ".gitignore").unlink()
    fresh = {w.path.name: w for w in init(repo)}  # asv's configuration is the user's now: only proofbench's own
    assert fresh[".gitignore"].written and (repo / ".gitignore").read_text() == ".proofbench/\n"


def test_what_a_command_writes_outside_any_project_is_never_offered_to_git(repo, monkeypatch, capsys):
    # ingest and report run in a repository with no project file: their .proofbench/ ignores itself
    from test_ingest_labels_again import write

    from proofbench import cli

    monkeypatch.chdir(repo)
    monkeypatch.delenv("PROOFBENCH_DB", raising=False)
    write(repo.parent / "results", "a" * 40)
    assert cli.main(["ingest", str(repo.parent / "results")]) == 0
    assert cli.main(["report"]) == 0
    capsys.readouterr()
    assert (repo / ".proofbench" / "proofbench.sqlite").exists() and (repo / ".proofbench" / "site").is_dir()
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                            check=True, capture_output=True, text=True)
    assert status.stdout == ""
    (repo / ".proofbench" / ".gitignore").write_text("site/\n")  # the user's own is kept
    assert cli.main(["ingest", str(repo.parent / "results")]) == 0
    assert (repo / ".proofbench" / ".gitignore").read_text() == "site/\n"


def test_init_prints_each_path_whole_on_one_line(repo, capsys):
    # a path folded at the console's width (80 columns where stderr is no terminal) cannot be copied
    from proofbench import cli

    deep = repo / ("a-checkout-path-longer-than-sixty-characters-to-catch-width-bugs-" * 2).rstrip("-")
    deep.mkdir()
    subprocess.run(["git", "-C", str(deep), "init", "-q", "-b", "main"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(deep), "-c", "user.name=B", "-c", "user.email=b@example.invalid", "commit", "-q",
                    "--allow-empty", "-m", "first"], check=True, capture_output=True)
    assert cli.main(["init", str(deep)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert f"wrote {deep / 'asv.conf.json'}" in lines and f"wrote {deep / 'proofbench.toml'}" in lines
    assert len(f"wrote {deep / 'asv.conf.json'}") > 150


def _checkout(path: Path, branch: str = "main") -> Path:
    # a git repository at `path` with one commit on `branch`
    path.mkdir(parents=True, exist_ok=True)
    for args in (["init", "-q", "-b", branch], ["-c", "user.name=B", "-c", "user.email=b@example.invalid", "commit",
                                                 "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    return path


def _written(repo: Path) -> set[str]:
    # what init may write, of what is there
    return {name for name in ("asv.conf.json", "proofbench.toml", "bench", ".gitignore") if (repo / name).exists()}


@pytest.mark.parametrize("directory, branch, name", [('quo"te', "main", None), ("back\\slash", "main", None),
                                                     ("plain", 'feat"x', None), ("plain", "main", 'a\\"b')])
def test_init_writes_names_with_quotes_and_backslashes_as_json(tmp_path, directory, branch, name):
    from proofbench.pipeline.asv import read_config
    from proofbench.pipeline.scaffold import init

    repo = _checkout(tmp_path / directory, branch)
    if name:
        (repo / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
    init(repo)
    conf = read_config(repo / "asv.conf.json")  # asv's own reader, the one `proofbench generate` uses
    assert (conf["project"], conf["branches"], conf["benchmark_dir"]) == (name or directory, [branch], "bench")
    assert (repo / "asv.conf.json").read_text().startswith("{\n    // asv's configuration")  # its comments kept


def test_init_refuses_a_suite_directory_with_a_newline_and_writes_nothing(repo, capsys):
    # the project file init writes names the suite in comment lines: a newline would end one
    from proofbench import cli

    (repo / "asv.conf.json").write_text('{"version": 1, "benchmark_dir": "ben\\nch"}')
    assert cli.main(["init", str(repo)]) == 2
    assert capsys.readouterr().err.strip() == (f"proofbench: {repo / 'asv.conf.json'}: benchmark_dir must be a "
                                               f"directory inside the repository (a name without control "
                                               f"characters), got 'ben\\nch'")
    assert _written(repo) == {"asv.conf.json"}


def test_init_takes_a_table_in_a_comment_for_no_table(repo, capsys):
    from proofbench import cli, project

    (repo / "pyproject.toml").write_text("# TODO: add a [tool.proofbench] table later\n[project]\nname = \"x\"\n")
    assert cli.main(["init", str(repo)]) == 0
    assert f"wrote {repo / 'proofbench.toml'}" in capsys.readouterr().err.splitlines()
    assert project.find(repo).file == repo / "proofbench.toml"


def test_init_keeps_the_table_of_pyproject_and_names_that_file(repo, capsys):
    from proofbench import cli, project

    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.proofbench]\nsubjects = ["bench.subjects"]\n')
    assert cli.main(["init", str(repo)]) == 0
    assert f"kept  the [tool.proofbench] table of {repo / 'pyproject.toml'}" in capsys.readouterr().err.splitlines()
    assert not (repo / "proofbench.toml").exists() and project.find(repo).file == repo / "pyproject.toml"


def test_init_refuses_a_pyproject_that_is_not_toml_and_writes_nothing(repo, capsys):
    from proofbench import cli

    (repo / "pyproject.toml").write_text("[project\nname = \"x\"\n")
    assert cli.main(["init", str(repo)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"proofbench: {repo / 'pyproject.toml'}: not valid TOML: ") and err.count("\n") == 1
    assert _written(repo) == set()


@pytest.mark.parametrize("link", ["proofbench.toml", "asv.conf.json", ".gitignore", "bench", "bench/subjects.py"])
def test_init_writes_nothing_through_a_dangling_link(repo, tmp_path, capsys, link):
    from proofbench import cli

    outside = tmp_path / "outside" / "OUTSIDE"  # its directory is there: a write through the link would succeed
    outside.parent.mkdir()
    (repo / link).parent.mkdir(exist_ok=True)
    (repo / link).symlink_to(outside)
    assert cli.main(["init", str(repo)]) == 2
    err = capsys.readouterr().err
    assert err == (f"proofbench: {repo / link}: a symbolic link to {outside}, which is not there; init writes nothing "
                   f"through a link: remove it, or create what it names\n")
    assert list(outside.parent.iterdir()) == [] and _written(repo) <= {"bench"}
    assert not (repo / "bench" / "__init__.py").exists()


def test_init_keeps_a_link_to_a_file_and_leaves_what_it_names_as_it_was(repo, tmp_path, capsys):
    from proofbench import cli

    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("proofbench.toml", ".gitignore"):
        (outside / name).write_text("# the user's\n")
        (repo / name).symlink_to(outside / name)
    assert cli.main(["init", str(repo)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert f"kept  {repo / 'proofbench.toml'}" in lines
    assert (f"kept  {repo / '.gitignore'}, a symbolic link init writes nothing through: add .asv/, .proofbench/ to it "
            f"yourself") in lines
    assert [(outside / name).read_text() for name in ("proofbench.toml", ".gitignore")] == ["# the user's\n"] * 2


def test_init_refuses_a_suite_directory_linked_out_of_the_repository(repo, tmp_path):
    from proofbench.pipeline.scaffold import init

    (tmp_path / "elsewhere").mkdir()
    (repo / "bench").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match=r"bench: a symbolic link out of the repository"):
        init(repo)
    assert list((tmp_path / "elsewhere").iterdir()) == [] and _written(repo) == {"bench"}


def test_init_in_a_subdirectory_points_asv_at_the_repository_and_the_subdirectory(repo):
    from asv.plugins.git import Git

    from proofbench.pipeline.asv import read_config
    from proofbench.pipeline.scaffold import init

    project = repo / "packages" / "sub"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = \"subpkg\"\n")
    init(project)
    conf = read_config(project / "asv.conf.json")
    assert (conf["project"], conf["repo"], conf["repo_subdir"]) == ("subpkg", "../..", "packages/sub")
    assert (project / conf["repo"]).resolve() == repo and Git.is_local_repo(str(project / conf["repo"]))
    init(repo)
    at_root = read_config(repo / "asv.conf.json")
    assert (at_root["repo"], at_root["repo_subdir"]) == (".", "")


def test_a_shallow_clone_places_no_commit(repo, tmp_path, capsys):
    # history and ingest --repo placed the clone's one commit first and every earlier one nowhere,
    # and a check without git then read one point per series and passed
    from test_ingest_labels_again import write

    from proofbench import cli
    from proofbench.pipeline import history

    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True,
                   capture_output=True)
    said = f"{shallow}: a shallow clone cannot place commits on main's first-parent history (fetch the full history"
    with pytest.raises(InputError, match=re.escape(said)):
        history.commits(shallow, "main")
    write(tmp_path / "results", git.head(shallow))
    url = f"sqlite:///{tmp_path / 'shallow.sqlite'}"
    assert cli.main(["ingest", str(tmp_path / "results"), "--repo", str(shallow), "--db", url]) == 2
    assert said in " ".join(capsys.readouterr().err.split())
    assert cli.main(["ingest", str(tmp_path / "results"), "--db", url]) == 0  # without the repository: taken
    assert cli.main(["check", "--repo", str(shallow), "--branch", "main", "--no-confirm", "--db", url]) == 2
    assert "or check without the repository, --no-git" in " ".join(capsys.readouterr().err.split())
