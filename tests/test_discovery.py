"""asv's discovery of the suite, kept for the rounds of one re-measurement."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from proofbench.pipeline import remeasure
from proofbench.pipeline.discovery import keep
from proofbench.pipeline.remeasure import Bench, Round, Target, fresh_discovery

FOUND = [{"name": "features.Score.time_call", "params": [["'baseline'"]], "type": "time"}]


def test_the_first_run_discovers_and_keeps_it_and_later_runs_read_it(tmp_path):
    calls = []

    def discover(conf, repo, environments, commit_hashes, check):
        calls.append(commit_hashes)
        return FOUND

    kept = tmp_path / "remeasure" / "discovered.json"  # its folder not made yet
    assert keep(discover, kept)("conf", "repo", ["env"], ["a", "b"], False) == FOUND
    assert keep(discover, kept)("conf", "repo", ["env"], ["b", "a"], False) == FOUND
    assert calls == [["a", "b"]] and [p.name for p in kept.parent.iterdir()] == ["discovered.json"]
    kept.write_text('[{"name": ')  # unreadable (a run killed while writing cannot leave this; a hand can)
    assert keep(discover, kept)("conf", "repo", ["env"], ["a", "b"], False) == FOUND
    assert len(calls) == 2 and json.loads(kept.read_text()) == FOUND


def test_a_failed_discovery_keeps_nothing_so_the_next_run_discovers(tmp_path):
    def broken(*args):
        raise RuntimeError("Failed to build the project and import the benchmark suite.")

    kept = tmp_path / "discovered.json"
    try:
        keep(broken, kept)("conf", "repo", ["env"], ["a"], False)
    except RuntimeError:
        pass
    assert not kept.exists() and list(tmp_path.iterdir()) == []


def test_the_rounds_of_one_re_measurement_share_a_discovery_and_the_next_one_starts_afresh(tmp_path, monkeypatch):
    stale = tmp_path / "remeasure" / "discovered.json"  # an earlier check's, of the suite as it was then
    stale.parent.mkdir()
    stale.write_text(json.dumps(FOUND))
    seen = []

    def measure_round(layout, repo, branch, order, targets, profile, machine, directory, bench=None,
                      discovered=None):
        seen.append((discovered, discovered.exists()))
        discovered.write_text(json.dumps(FOUND))  # what the first round's asv keeps
        return Round({c: {} for c in order}, 1.0)

    monkeypatch.setattr(remeasure, "measure_round", measure_round)
    remeasure.alternate(SimpleNamespace(workdir=tmp_path), Path("."), "main", ("a", "b"), None, None, None, rounds=3)
    assert seen == [(stale, False), (stale, True), (stale, True)]


def test_a_benchs_rounds_beside_a_reference_share_one_discovery_made_afresh_with_it(tmp_path, monkeypatch):
    # a check's bisections: every read is a round of a commit beside a reference, as one asv run
    # over the range would measure them; the suite's discovery of an earlier check is not read
    (tmp_path / "bisect").mkdir()
    (tmp_path / "bisect" / "discovered.json").write_text(json.dumps(FOUND))
    kept = fresh_discovery(tmp_path / "bisect")
    assert kept == tmp_path / "bisect" / "discovered.json" and not kept.exists()
    seen = []

    def measure_round(layout, repo, branch, order, targets, profile, machine, directory, bench=None,
                      discovered=None):
        seen.append((order, discovered))
        return Round({c: {targets[0]: 1.0} for c in order}, 1.0)

    monkeypatch.setattr(remeasure, "measure_round", measure_round)
    bench = Bench(SimpleNamespace(workdir=tmp_path), Path("."), "main", None, None, kept)
    target = Target("features.Score.time_call", ("baseline",))
    assert bench.beside(target, "c1", "ref", "0-c1") == (1.0, 1.0)
    bench.beside(target, "c2", "ref", "1-c2", reference_first=True)
    assert seen == [(("c1", "ref"), kept), (("ref", "c2"), kept)]
