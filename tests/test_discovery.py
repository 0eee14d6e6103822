"""asv's discovery of the suite, kept for later runs that start at the same commit."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from proofbench.pipeline import discovery, remeasure
from proofbench.pipeline.discovery import keep
from proofbench.pipeline.remeasure import Bench, Round, Target

FOUND = {"a": [{"name": "features.Score.time_call", "params": [["'baseline'", "'optimized'"]]}],
         "b": [{"name": "features.Score.time_call", "params": [["'baseline'", "'fused'", "'optimized'"]]}]}


def _discover(calls):
    def discover(conf, repo, environments, commit_hashes, check):  # what asv finds with the run's first commit
        calls.append(list(commit_hashes))
        return FOUND[commit_hashes[0]]
    return discover


def test_a_run_reads_what_an_earlier_run_from_the_same_commit_found(tmp_path):
    # the two commits' parameter lists differ (a variant added): each run is answered as asv
    # would answer it, from its own first commit
    calls = []
    kept = tmp_path / "remeasure" / "discovered"  # not made yet
    runs = [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]
    assert [keep(_discover(calls), kept)("conf", "repo", ["env"], run, False) for run in runs] == [
        FOUND["a"], FOUND["b"], FOUND["a"], FOUND["b"]]
    assert calls == [["a", "b"], ["b", "a"]] and sorted(p.name for p in kept.iterdir()) == ["a.json", "b.json"]
    (kept / "a.json").write_text('[{"name": ')  # unreadable (a write is whole or absent; a hand can do this)
    assert keep(_discover(calls), kept)("conf", "repo", ["env"], ["a"], False) == FOUND["a"] and len(calls) == 3


def test_a_failed_discovery_keeps_nothing_so_the_next_run_discovers(tmp_path):
    def broken(*args):
        raise RuntimeError("Failed to build the project and import the benchmark suite.")

    with pytest.raises(RuntimeError):
        keep(broken, tmp_path / "discovered")("conf", "repo", ["env"], ["a"], False)
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_is_asvs_with_its_discovery_kept(tmp_path, monkeypatch):
    # `python -m proofbench.pipeline.discovery run ...`: asv's own main, whose discovery (a
    # classmethod of Benchmarks) goes through `keep` where KEPT names a directory
    from asv import benchmarks, main

    calls = []
    monkeypatch.setattr(benchmarks.Benchmarks, "_disc_benchmarks", classmethod(
        lambda cls, *args: _discover(calls)(*args)))

    def asv_main():  # two runs' worth of asv: discovery as asv's run calls it
        for run in (["b", "a"], ["b", "a"]):
            assert benchmarks.Benchmarks._disc_benchmarks("conf", "repo", ["env"], run, False) == FOUND["b"]
        raise SystemExit(0)

    monkeypatch.setattr(main, "main", asv_main)
    monkeypatch.setenv(discovery.KEPT, str(tmp_path / "discovered"))
    with pytest.raises(SystemExit):
        discovery.main()
    assert calls == [["b", "a"]] and (tmp_path / "discovered" / "b.json").is_file()


def _fake_round(seen):
    def measure_round(layout, repo, branch, order, targets, profile, machine, directory, bench=None,
                      discovered=None):
        seen.append((tuple(order), discovered))
        return Round({c: {t: 1.0 for t in targets or ()} for c in order}, 1.0)
    return measure_round


def test_a_re_measurement_starts_with_no_discovery_kept_and_gives_its_rounds_one_place(tmp_path, monkeypatch):
    stale = tmp_path / "remeasure" / "discovered" / "a.json"  # an earlier check's, of the suite as it was then
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps(FOUND["a"]))
    seen = []
    monkeypatch.setattr(remeasure, "measure_round", _fake_round(seen))
    remeasure.alternate(SimpleNamespace(workdir=tmp_path), Path("."), "main", ("a", "b"), None, None, None, rounds=3)
    assert seen == [(("a", "b"), stale.parent), (("b", "a"), stale.parent), (("a", "b"), stale.parent)]
    assert not stale.exists()


def test_a_benchs_rounds_beside_a_reference_share_one_place_made_afresh_with_it(tmp_path, monkeypatch):
    # a check's bisections: every measurement a round of a commit beside a reference
    stale = tmp_path / "bisect" / "smoke" / "discovered" / "ref.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("[]")
    other = tmp_path / "bisect" / "quick" / "discovered" / "ref.json"  # another profile's, in the same check
    other.parent.mkdir(parents=True)
    other.write_text("[]")
    bench = Bench.fresh(SimpleNamespace(workdir=tmp_path), Path("."), "main", SimpleNamespace(name="smoke"), None)
    assert bench.discovered == stale.parent and not stale.exists() and other.exists()
    seen = []
    monkeypatch.setattr(remeasure, "measure_round", _fake_round(seen))
    target = Target("features.Score.time_call", ("baseline",))
    assert bench.beside(target, "c1", "ref", "0-c1") == (1.0, 1.0)
    bench.beside(target, "c2", "ref", "1-c2", reference_first=True)
    assert seen == [(("c1", "ref"), stale.parent), (("ref", "c2"), stale.parent)]
