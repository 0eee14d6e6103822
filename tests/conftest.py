"""Shared fixtures: proofbench's own catalogue as a project, and a real asv run of its smoke profile."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent  # proofbench's checkout, whose proofbench.toml is the catalogue


@pytest.fixture(scope="session")
def catalogue():
    """The seed catalogue's project (proofbench.toml at the checkout's root)."""
    from proofbench import project

    return project.load(REPO / "proofbench.toml")


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, catalogue):
    """`asv run` of the loading subjects at tiny size, into a private layout."""
    from proofbench.machine.capture import capture
    from proofbench.pipeline import runner
    from proofbench.pipeline.asv import Layout
    from proofbench.profile import get_profile

    layout = Layout.under(catalogue, tmp_path_factory.mktemp("asv"))
    outcome = runner.run(layout, get_profile("smoke"), capture(), bench=r"^loading\.(LmdbRead|FastaToLmdb)\.")
    assert outcome.results, outcome.log
    return layout, outcome


def make_project(directory: Path, subjects: str = "proofbench.subjects.loading") -> Path:
    """A minimal project directory (proofbench.toml, asv.conf.json) whose outputs stay inside it."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "proofbench.toml").write_text(f'subjects = ["{subjects}"]\n')
    conf = {"version": 1, "project": "scratch", "repo": ".", "branches": ["main"], "environment_type": "virtualenv",
            "benchmark_dir": "benchmarks", "env_dir": "env", "results_dir": "results", "html_dir": "html"}
    (directory / "asv.conf.json").write_text(json.dumps(conf))
    return directory


@pytest.fixture
def tmp_project(tmp_path: Path) -> Path:
    """A scratch project directory (see make_project)."""
    return make_project(tmp_path / "project")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'proofbench.sqlite'}"


def catalogue_registry():
    """Every subject of the seed catalogue, registered (imports each area module once)."""
    from proofbench import project
    from proofbench.catalogue import load_catalogue

    return load_catalogue(project.load(REPO / "proofbench.toml")).registry


@pytest.fixture(scope="module")
def one_torch_thread():
    """One intra-op thread, as the quick profile runs: faster and steadier on a small machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
