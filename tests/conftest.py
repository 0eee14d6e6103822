"""Shared fixtures: a real asv run of the smoke profile, made once per test session."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """`asv run` of the loading subjects at tiny size, into a private layout."""
    from proofbench.machine.capture import capture
    from proofbench.pipeline import runner
    from proofbench.profile import get_profile

    layout = runner.Layout.under(tmp_path_factory.mktemp("asv"))
    outcome = runner.run(get_profile("smoke"), capture(), bench=r"^loading\.(LmdbRead|FastaToLmdb)\.",
                         layout=layout)
    assert outcome.results, outcome.log
    return layout, outcome


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'proofbench.sqlite'}"
