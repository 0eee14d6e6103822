"""GPU runs watched: NVML telemetry beside each CUDA benchmark, stored with its result, and a speed
verdict taken while the GPU throttled or was shared made inconclusive with that reason; one
machine's CPU and CUDA results side by side (`proofbench compare MACHINE --devices cpu cuda`).

No GPU is needed: NVML is the fake of tests/nvml_fake.py serving tests/fixtures/nvml_h100.json
(a fixture, not a live reading), and the stored results are written as asv and the benchmark
processes write them. The sampler on a real GPU is exercised by test_real_gpu_is_watched, which
is skipped where NVML sees no GPU.
"""
from __future__ import annotations

import json
import shutil
import time
from types import SimpleNamespace

import pynvml
import pytest
from conftest import REPO, make_project
from nvml_fake import FakeNvml
from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.analysis.comparison import SubjectFigures, VariantFigures
from proofbench.analysis.verdict import Why, judge
from proofbench.claim import Claim
from proofbench.cli import main
from proofbench.db.models import Result
from proofbench.db.session import connect
from proofbench.machine.nvml import gpu_profiles
from proofbench.measure import gpu_watch, sidecar
from proofbench.measure.bench import SubjectBenchmark
from proofbench.measure.gpu_watch import GpuConditions
from proofbench.measure.noise import OtherLoad
from proofbench.reports.formatting import verdict_reason
from proofbench.rounds import Block, Round
from proofbench.stats import paired

COMMIT = "a" * 40
CPU_ENV, CUDA_ENV = "existing-py_cpu", "existing-py_cuda"
OWN = "loading.LmdbRead.time_call"
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples"]


def _watched(reading: str, seconds: float = 0.03) -> dict:
    nvml = FakeNvml(reading=reading)
    sampler = gpu_watch.start("cuda", nvml=nvml, interval=0.005)
    assert sampler is not None
    time.sleep(seconds)
    summary = gpu_watch.summary(sampler.telemetry_now())
    sampler.__exit__(None, None, None)
    assert nvml.open_sessions == 0
    return summary


# --- the sampler and the run's record ----------------------------------------------------

def test_a_power_capped_run_is_recorded_with_its_power_and_is_not_throttled():
    # an H100 under full bf16 load runs at its power limit: the card's own speed, not a slowdown
    summary = _watched("power_cap")
    assert summary["power_capped"] and not summary["throttled"] and summary["throttle_reasons"] == []
    assert summary["mean_power_w"] == pytest.approx(699.0) and summary["min_sm_clock_mhz"] == 1665
    assert summary["max_temperature_c"] == 74 and summary["samples"] >= 2
    assert summary["other_processes"] == 0 and summary["other_pids"] == []  # this process is no other
    json.dumps(summary, allow_nan=False)  # what the sidecar keeps


def test_another_process_on_the_gpu_is_recorded_by_its_id():
    summary = _watched("shared")
    assert not summary["throttled"] and summary["other_processes"] == 1 and summary["other_pids"] == [4242]


def test_one_process_under_a_foreign_id_may_be_this_one_and_is_not_counted():
    # a container sees host process ids: the one process listed may be this one, renamed
    assert _watched("foreign_namespace")["other_processes"] == 0


def test_a_thermal_slowdown_reads_thermal():
    summary = _watched("thermal_slowdown")
    assert summary["throttled"] and summary["thermal"] and summary["throttle_reasons"] == ["sw_thermal_slowdown"]


def test_nothing_is_watched_on_cpu_or_without_nvml():
    assert gpu_watch.start("cpu", nvml=FakeNvml()) is None
    assert gpu_watch.start("cuda", nvml=FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)) is None
    assert gpu_watch.start("cuda", nvml=FakeNvml(count=0)) is None


def _teardown_note(gpu) -> dict:
    noted = {}
    bench = SimpleNamespace(_load=OtherLoad().__enter__(), _gpu=gpu, _method="time_call",
                            _profile=SimpleNamespace(torch_threads=1, name="gpu", device="cuda"),
                            _note=lambda status, reason="", method=None, **details: noted.update(details))
    SubjectBenchmark.teardown(bench)
    return noted


def test_the_teardown_record_carries_the_gpu_summary_only_when_watched():
    sampler = gpu_watch.start("cuda", nvml=FakeNvml(reading="thermal_slowdown"), interval=0.005)
    try:
        noted = _teardown_note(sampler)
    finally:
        sampler.__exit__(None, None, None)
    assert noted["gpu"]["throttle_reasons"] == ["sw_thermal_slowdown"] and "busy" in noted
    assert "gpu" not in _teardown_note(None)


@pytest.mark.skipif(not gpu_profiles()[0], reason="NVML sees no GPU on this machine: the real sampler has "
                    "nothing to read (the fake's scenarios above cover the logic)")
def test_real_gpu_is_watched():
    sampler = gpu_watch.start("cuda", interval=0.01)
    assert sampler is not None
    time.sleep(0.05)
    summary = gpu_watch.summary(sampler.telemetry_now())
    sampler.__exit__(None, None, None)
    assert summary["samples"] >= 2 and summary["mean_sm_clock_mhz"]


# --- the verdict ---------------------------------------------------------------------------

def _figures(gpu: GpuConditions | None) -> SubjectFigures:
    rounds = [Round(Block(1, 2.0 + 0.001 * (i % 3)), Block(1, 1.0), a_first=i % 2 == 0) for i in range(12)]
    variants = (VariantFigures("baseline", "ok", "", None, (), 10.0, None, None, None, None),
                VariantFigures("optimized", "ok", "", None, (), 10.0, paired(rounds), None, None, None, gpu=gpu))
    return SubjectFigures("box", COMMIT, "loading.lmdb_read", "loading", "sequence", "tiny", "", {}, variants)


CLAIM = Claim(id="c", subject="loading.lmdb_read", variant="optimized", source="000.txt", quote="2x",
              kind="speedup", metric="time", low=1.5, high=2.0)


def test_a_speedup_measured_while_the_gpu_throttled_is_inconclusive_and_says_why():
    assert judge(CLAIM, _figures(None), has_gpu=True).label == "reproduced"
    assert judge(CLAIM, _figures(GpuConditions()), has_gpu=True).label == "reproduced"  # watched, nothing wrong
    verdict = judge(CLAIM, _figures(GpuConditions(("hw_thermal_slowdown",))), has_gpu=True)
    assert (verdict.label, verdict.why) == ("inconclusive", Why.GPU_THROTTLED)
    assert verdict.value == pytest.approx(2.0, rel=0.01)  # the figure is still shown
    assert verdict_reason(verdict) == "GPU throttled (hw_thermal_slowdown) while measured"


def test_a_speedup_measured_beside_another_gpu_process_is_inconclusive_and_names_it():
    verdict = judge(CLAIM, _figures(GpuConditions((), (4242,), 1)), has_gpu=True)
    assert (verdict.label, verdict.why) == ("inconclusive", Why.GPU_SHARED)
    assert verdict_reason(verdict) == "another process used the GPU meanwhile (pid 4242)"


def test_conditions_merge_the_rows_behind_a_figure():
    hot = {"throttled": True, "throttle_reasons": ["hw_thermal_slowdown"], "other_processes": 0, "other_pids": []}
    shared = {"throttled": False, "throttle_reasons": [], "other_processes": 1, "other_pids": [4242]}
    assert GpuConditions.of([None, None]) is None
    assert GpuConditions.of([hot, None, shared]) == GpuConditions(("hw_thermal_slowdown",), (4242,), 1)
    # a record that still counts the power cap as a throttle (stored before it stopped) does not doubt a figure
    capped = {"throttled": True, "throttle_reasons": ["sw_power_cap"], "other_processes": 0, "other_pids": []}
    assert GpuConditions.of([capped]) == GpuConditions()


# --- stored, and one machine's devices side by side ---------------------------------------------

def _document(env: str, scale: float) -> dict:
    samples = {("baseline", "tiny"): [2e-3, 2.1e-3, 1.9e-3, 2e-3, 2.05e-3],
               ("optimized", "tiny"): [1e-3, 1.1e-3, 0.9e-3, 1e-3, 1.05e-3]}
    rows = [[x * scale for x in s] for s in samples.values()]
    result = [[sorted(r)[2] for r in rows], [["'baseline'", "'optimized'"], ["'tiny'"]], "w1", 1719664057275, 2.0,
              None, None, None, None, [1, 1], [5, 5], rows]
    return {"commit_hash": COMMIT, "env_name": env, "date": 1719663898000,
            "params": {"machine": "box", "python": "3.11", "cpu": "test CPU"}, "python": "3.11",
            "requirements": {}, "env_vars": {}, "result_columns": COLUMNS, "results": {OWN: result},
            "durations": {}, "version": 2}


def _record(env: str, variant: str, profile: str, gpu: dict | None) -> sidecar.Record:
    details = {"method": "time_call", "other_load_cores": 0.0, "busy": False, "threads": 1, "profile": profile,
               "device": "cuda" if gpu is not None else "cpu", **({"gpu": gpu} if gpu is not None else {})}
    return sidecar.Record("loading.LmdbRead", (variant, "tiny"), "ok", commit=COMMIT, env=env, details=details)


def _project(tmp_path):
    # a project whose suite has proofbench's own labels, so the results are a subject's
    project = make_project(tmp_path / "project")
    (project / "benchmarks").mkdir()
    shutil.copy(REPO / "benchmarks" / "proofbench.json", project / "benchmarks" / "proofbench.json")
    return project


def _ingested(tmp_path, scales: dict[str, float], records: list[sidecar.Record]) -> tuple[str, object]:
    # results of box at COMMIT, one file per environment (its times scaled), ingested with `records`
    project = _project(tmp_path)
    results = tmp_path / "results" / "box"
    results.mkdir(parents=True)
    for env, scale in scales.items():
        (results / f"{COMMIT[:8]}-{env}.json").write_text(json.dumps(_document(env, scale)))
    side = tmp_path / "sidecar.jsonl"
    sidecar.append(side, records)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["ingest", str(tmp_path / "results"), "--sidecar", str(side), "--db", url,
                 "--project", str(project)]) == 0
    return url, project


@pytest.fixture
def two_devices(tmp_path):
    """One machine's results of the quick (cpu) profile and of the gpu (cuda) profile at one commit,
    the CUDA times halved and its optimized run throttled."""
    throttled, calm = _watched("thermal_slowdown"), _watched("load")
    return _ingested(tmp_path, {CPU_ENV: 1.0, CUDA_ENV: 0.5},
                     [_record(CPU_ENV, "baseline", "quick", None), _record(CPU_ENV, "optimized", "quick", None),
                      _record(CUDA_ENV, "baseline", "gpu", calm), _record(CUDA_ENV, "optimized", "gpu", throttled)])


def test_ingest_keeps_the_gpu_summary_beside_busy(two_devices):
    url, _ = two_devices
    with Session(connect(url)) as session:
        stored = {(r.profile, r.params["variant"]): r.gpu for r in session.scalars(select(Result))}
    assert stored[("quick", "baseline")] is None and stored[("gpu", "baseline")]["throttled"] is False
    assert stored[("gpu", "optimized")]["throttle_reasons"] == ["sw_thermal_slowdown"]


@pytest.mark.parametrize("junk", [["not", "a", "record"], {"throttled": "yes", "throttle_reasons": [],
                                                            "other_processes": 0, "other_pids": []},
                                  {"throttled": True, "throttle_reasons": 5, "other_processes": 0, "other_pids": []},
                                  {"throttled": False, "throttle_reasons": [], "other_processes": 1,
                                   "other_pids": ["4242"]}])
def test_a_gpu_record_of_another_shape_is_not_kept_and_the_result_is(tmp_path, junk):
    url, _ = _ingested(tmp_path, {CUDA_ENV: 0.5}, [_record(CUDA_ENV, "optimized", "gpu", junk)])
    with Session(connect(url)) as session:
        stored = {r.params["variant"]: (r.gpu, r.busy) for r in session.scalars(select(Result))}
    assert stored["optimized"] == (None, False)  # the record's other fields are kept


def test_compare_devices_shows_cpu_and_cuda_side_by_side(two_devices, capsys):
    url, project = two_devices
    assert main(["compare", "box", "--devices", "cpu", "cuda", "--db", url, "--project", str(project)]) == 0
    text = capsys.readouterr().out
    assert "box [cpu] (A) against box [cuda] (B)" in text
    assert "A: box (cpu profiles)" in text and "B: box (cuda profiles)" in text
    assert "0.50x" in text  # items/s on the CPU over the CUDA profile's: half the CUDA one's
    assert "GPU throttled (sw_thermal_slowdown) while measured" in text
    assert main(["compare", "box", "--devices", "cpu", "cuda", "--format", "json", "--db", url,
                 "--project", str(project)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["a"]["device"], doc["b"]["device"]) == ("cpu", "cuda")
    (subject,) = doc["subjects"]
    optimized = subject["variants"][1]
    assert optimized["a"]["gpu"] is None and optimized["b"]["gpu"]["throttle_reasons"] == ["sw_thermal_slowdown"]
    assert optimized["throughput_ratio"]["estimate"] == pytest.approx(0.5)


def test_compare_devices_without_cuda_results_says_so_in_one_line(tmp_path, capsys):
    url, project = _ingested(tmp_path, {CPU_ENV: 1.0}, [_record(CPU_ENV, "baseline", "quick", None),
                                                       _record(CPU_ENV, "optimized", "quick", None)])
    capsys.readouterr()
    code = main(["compare", "box", "--devices", "cpu", "cuda", "--db", url, "--project", str(project)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "no cuda results on 'box' (profiles on cuda: gpu)" in err and "proofbench run --profile gpu" in err


def test_compare_needs_two_machines_or_devices(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["compare", "box", "--db", url]) == 2
    assert "give two machines" in capsys.readouterr().err
