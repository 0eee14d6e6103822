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
