"""`proofbench profile`: traces, top operators and counts of real subjects at tiny size, stored.

One torch subject (training.mixed_precision: a GPT-2 style model trained in fp32 and bf16) and
one that runs no torch operator (loading.lmdb_read: LMDB reads, profiled by the Python sampler),
plus a subject whose torch operators cover a sliver of the call (tokenization.padding_strategy),
which gets both profiles.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from conftest import catalogue_registry
from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.cli import main
from proofbench.db.profiles import VariantProfileRow
from proofbench.db.session import connect
from proofbench.declare import Equivalence, Metric, Size, Subject, Variant, Workload
from proofbench.errors import DeclarationError
from proofbench.measure.variant_profile import Settings, profile_subject

_FUNCTION = re.compile(r"^(?P<function>[^ ]+) \((?P<file>[^:]*):(?P<line>\d+)\)$")
SUBJECTS_DIR = Path(__file__).resolve().parent.parent / "subjects"


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """Both subjects profiled through the command into one database and one output directory."""
    where = tmp_path_factory.mktemp("profile")
    url = f"sqlite:///{where / 'p.sqlite'}"
    for subject in ("training.mixed_precision", "loading.lmdb_read"):
        code = main(["profile", subject, "--profile", "smoke", "--out", str(where / "out"), "--cache",
                     str(where / "cache"), "--energy-seconds", "0.05", "--db", url])
        assert code == 0
    return where / "out", url


def _trace(path: Path) -> list[dict]:
    document = json.loads(path.read_text())
    events = document["traceEvents"]
    assert isinstance(events, list) and events
    assert all("ph" in e and "name" in e and "pid" in e for e in events)
    complete = [e for e in events if e["ph"] == "X"]
    assert complete and all(e["dur"] >= 0 and e["ts"] >= 0 for e in complete)
    return events


def _summary(out: Path, subject: str) -> dict:
    return {v["variant"]: v for v in json.loads((out / subject / "tiny" / "summary.json").read_text())["variants"]}


def test_a_torch_subject_gets_a_torch_trace_and_real_operator_names(profiled):
    out, _ = profiled
    variants = _summary(out, "training.mixed_precision")
    assert variants["fp16"]["status"] == "skipped" and "CUDA" in variants["fp16"]["reason"]
    for name in ("baseline", "bf16"):
        v = variants[name]
        assert v["status"] == "ok" and set(v["profiles"]) == {"torch"}
        events = _trace(out / "training.mixed_precision" / "tiny" / f"{name}.trace.json")
        assert any(e["name"] in ("aten::mm", "aten::addmm") for e in events)
        rows = v["profiles"]["torch"]["rows"]
        aten = [r["name"] for r in rows if r["name"].startswith("aten::")]
        assert aten and all(hasattr(torch.ops.aten, op.removeprefix("aten::")) for op in aten), aten
        assert rows == sorted(rows, key=lambda r: -r["self_seconds"])
        assert v["flops"]["by_dtype"] and v["bytes_moved"] is None and v["bound"] == "compute"
    assert set(variants["baseline"]["flops"]["by_dtype"]) == {"float32"}
    assert set(variants["bf16"]["flops"]["by_dtype"]) == {"bfloat16"}
    # the same model and steps: the same operations, whatever their precision
    assert sum(variants["baseline"]["flops"]["by_dtype"].values()) == sum(variants["bf16"]["flops"]["by_dtype"].values())


def test_a_subject_without_torch_gets_a_python_profile_of_real_functions(profiled):
    out, _ = profiled
    variants = _summary(out, "loading.lmdb_read")
    for name, own in (("baseline", "_read_per_key"), ("optimized", "_read_batched")):
        v = variants[name]
        assert set(v["profiles"]) == {"python"} and v["flops"] is None and v["bound"] == "data"
        assert v["bytes_moved"] > 0
        events = _trace(out / "loading.lmdb_read" / "tiny" / f"{name}.trace.json")
        assert own in {e["name"] for e in events}
        rows = v["profiles"]["python"]["rows"]
        assert own in {_FUNCTION.match(r["name"])["function"] for r in rows}
        for row in rows:  # every function named from the project's subjects is defined in that file
            found = _FUNCTION.match(row["name"])
            assert found, row["name"]
            if found["file"].startswith("subjects/") and not found["function"].startswith("<"):
                source = (SUBJECTS_DIR / found["file"].removeprefix("subjects/")).read_text()
                assert f"def {found['function']}(" in source, row["name"]
    assert variants["baseline"]["bytes_moved"] == variants["optimized"]["bytes_moved"]  # the same data read


def test_profiles_are_stored_with_energy_or_the_reason(profiled):
    _, url = profiled
    with Session(connect(url)) as session:
        rows = list(session.scalars(select(VariantProfileRow).order_by(VariantProfileRow.id)))
    assert {(r.subject, r.variant) for r in rows} >= {("training.mixed_precision", "bf16"),
                                                      ("loading.lmdb_read", "optimized")}
    ok = [r for r in rows if r.status == "ok"]
    assert all(r.operators and r.traces and Path(next(iter(r.traces.values()))).is_file() for r in ok)
    assert all(r.threads == 1 and r.device == "cpu" and r.size == "tiny" for r in rows)
    for r in ok:  # measured where the hardware can say, else not measurable with the reason, never a guess
        assert (r.energy_joules is not None and r.energy_calls > 0) or (r.energy_joules is None and r.energy_reason)


def test_operators_covering_little_of_the_call_get_a_python_profile_beside(tmp_path):
    subject = catalogue_registry().get("tokenization.padding_strategy")
    found = profile_subject(subject, "tiny", tmp_path, Settings(energy_seconds=0.01), ("baseline",))
    (baseline,) = found
    assert baseline.profile.kind == "torch" and baseline.python is not None
    assert baseline.profile.coverage < 0.5 and baseline.explaining is baseline.python
    assert set(baseline.traces) == {"torch", "python"}
    _trace(tmp_path / "baseline.python.trace.json")


def test_unknown_subject_variant_or_size_is_one_line(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'p.sqlite'}"
    assert main(["profile", "loading.nope", "--db", url]) == 2
    assert main(["profile", "loading.lmdb_read", "--variant", "fastest", "--db", url]) == 2
    assert main(["profile", "loading.lmdb_read", "--size", "huge", "--db", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "expected one of baseline, optimized" in err[1] and "tiny, small, large" in err[2]


def _subject(**extra) -> Subject:
    return Subject(area="loading", name="x", item="row", description="d",
                   prepare=lambda ctx: Workload([1], 1), variants=(Variant("baseline", len), Variant("other", len)),
                   equivalence=Equivalence(Metric("d", "u", False), 0, lambda a, b: 0),
                   sizes=tuple(Size.of(n) for n in ("tiny", "small", "large")), **extra)


def test_subjects_declare_what_bounds_them():
    assert _subject().bound == "compute"
    with pytest.raises(DeclarationError, match="bound must be one of compute, data"):
        _subject(bound="network")
    with pytest.raises(DeclarationError, match="must declare bytes_moved"):
        _subject(bound="data")
    assert _subject(bound="data", bytes_moved=lambda inputs, out: 8.0).bound == "data"
    registry = catalogue_registry()
    data = {s.key for s in registry if s.bound == "data"}
    assert {"loading.lmdb_read", "loading.fasta_to_lmdb", "tokenization.batch_tokenize",
            "tokenization.padding_strategy"} <= data
    assert registry.get("training.mixed_precision").bound == "compute"


def test_sampled_stacks_become_nested_complete_events():
    from proofbench.measure.profiler import chrome_trace

    a, b, c = "outer\x00/x/a.py\x001", "inner\x00/x/a.py\x009", "other\x00/x/b.py\x003"
    events = chrome_trace([((a, b), 0.001), ((a, b), 0.001), ((a,), 0.002), ((a, c), 0.001), ((), 0.001)],
                          pid=7)["traceEvents"]
    spans = {(e["name"], round(e["ts"])): e["dur"] for e in events if e["ph"] == "X"}
    assert spans == {("inner", 0): pytest.approx(2000), ("other", 4000): pytest.approx(1000),
                     ("outer", 0): pytest.approx(5000)}  # microseconds; the parent spans its children
    assert events[0] == {"name": "process_name", "ph": "M", "pid": 7, "tid": 0, "args": {"name": "python (sampled)"}}


def test_torch_rows_leave_out_memory_bookkeeping_and_sort_by_device_time_on_a_gpu():
    from types import SimpleNamespace

    from proofbench.measure.profiler import _torch_rows

    def event(key, cpu, device):
        return SimpleNamespace(key=key, count=2, self_cpu_time_total=cpu, cpu_time_total=cpu * 2,
                               self_device_time_total=device, self_cpu_memory_usage=64)

    averages = [event("aten::mm", 10.0, 900.0), event("[memory]", 0.0, 0.0), event("aten::copy_", 500.0, 5.0)]
    assert [r.name for r in _torch_rows(averages, device=False)] == ["aten::copy_", "aten::mm"]
    gpu = _torch_rows(averages, device=True)
    assert [r.name for r in gpu] == ["aten::mm", "aten::copy_"] and gpu[0].self_device_seconds == pytest.approx(9e-4)
    assert gpu[0].self_seconds == pytest.approx(1e-5) and gpu[0].calls == 2 and gpu[0].self_memory_bytes == 64
