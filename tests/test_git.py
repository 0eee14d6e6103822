"""The one module that talks to git: values from files reach git as data, never as options."""
from __future__ import annotations

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
