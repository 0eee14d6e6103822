"""The suite's labels: written by generate beside the modules, checked for staleness, read by ingest
instead of the subjects (so ingest imports neither subjects nor torch), refused in one line when broken."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO, catalogue_registry

from proofbench.errors import InputError
from proofbench.pipeline import labels
from proofbench.pipeline.generate import benchmark_index, generate


def test_generate_writes_the_labels_and_check_finds_them_stale(tmp_path):
    registry = catalogue_registry()
    suite = tmp_path / "benchmarks"
    assert suite / labels.FILE in generate(registry, suite)
    assert generate(registry, suite, check=True) == []
    read = labels.read(suite)
    index = benchmark_index(registry)
    assert set(read) == set(index)
    time_call = read["loading.LmdbRead.time_call"]
    assert (time_call.subject, time_call.metric, time_call.unit, time_call.higher_is_better, time_call.kind) == \
        ("loading.lmdb_read", "time", "seconds", False, "subject")
    assert time_call.param_names == ["variant", "size"] and "baseline" in time_call.details["variants"]
    assert time_call.version == index["loading.LmdbRead.time_call"].version
    document = json.loads((suite / labels.FILE).read_text())
    document["benchmarks"]["loading.LmdbRead.time_call"]["unit"] = "minutes"
    (suite / labels.FILE).write_text(json.dumps(document))
    assert generate(registry, suite, check=True) == [suite / labels.FILE]


def test_the_checked_in_labels_match_the_catalogue():
    assert labels.read(REPO / "benchmarks") == {name: labels.of(info)
                                                for name, info in benchmark_index(catalogue_registry()).items()}


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(version=9), "labels format version 9 is not supported"),
    (lambda d: d["benchmarks"]["loading.LmdbRead.time_call"].update(unit=["s"]),
     "benchmark 'loading.LmdbRead.time_call': unit: expected a str"),
    (lambda d: d["benchmarks"]["loading.LmdbRead.time_call"].update(subject="loading.nothing"),
     "subject 'loading.nothing' is not in 'subjects'"),
    (lambda d: d["subjects"]["loading.lmdb_read"].update(area="x" * 51), "area: expected a str of at most 50"),
    (lambda d: d["subjects"]["loading.lmdb_read"]["details"].update(description="a\x00b"), "NUL"),
    (lambda d: d.update(format="something else"), "not a proofbench labels file"),
], ids=["version", "unit-a-list", "unknown-subject", "area-too-long", "nul", "format"])
def test_a_broken_labels_file_is_one_line_naming_it(tmp_path, edit, message):
    document = json.loads((REPO / "benchmarks" / labels.FILE).read_text())
    edit(document)
    (tmp_path / labels.FILE).write_text(json.dumps(document))
    with pytest.raises(InputError) as err:
        labels.read(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / labels.FILE}: ") and message in str(err.value)


def test_a_plain_benchmark_is_labelled_from_benchmarks_json_else_from_its_name(tmp_path):
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps({"version": 2,
                                "m.Peak.peakmem_x": {"type": "peakmemory", "unit": "bytes", "version": "1",
                                                     "param_names": ["n"], "params": [["1", "2"]]},
                                "m.bad": {"type": "nonsense"}}))
    entries, warnings = labels.read_asv(path)
    assert set(entries) == {"m.Peak.peakmem_x"} and len(warnings) == 1 and "'m.bad': type" in warnings[0]
    peak = labels.plain("m.Peak.peakmem_x", "1", 1, entries["m.Peak.peakmem_x"])
    assert (peak.metric, peak.unit, peak.param_names, peak.kind) == ("peakmemory", "bytes", ["n"], "plain")
    assert labels.plain("m.Peak.peakmem_x", "1", 2, entries["m.Peak.peakmem_x"]).param_names == ["p1", "p2"]
    guessed = labels.plain("m.T.track_rate", "1", 0, None)
    assert (guessed.metric, guessed.unit, guessed.higher_is_better) == ("track", "unit", False)
    assert labels.plain("time_top_level", "1", 0, None).unit == "seconds"
    entries, (warning,) = labels.read_asv(tmp_path / "missing.json")
    assert entries == {} and warning.startswith(f"{tmp_path / 'missing.json'}: not found") and "p1..pn" in warning


def test_ingest_imports_no_subject_and_no_torch(tmp_path):
    from test_hostile_results import FIRST, document

    results = tmp_path / "results" / "box"
    results.mkdir(parents=True)
    (results / f"{FIRST[:8]}-env.json").write_text(json.dumps(document(FIRST)))
    script = ("import sys; from proofbench.cli import main; code = main(sys.argv[1:]); "
              "loaded = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers') "
              "or m.startswith('proofbench.subjects')]; print(loaded); sys.exit(code)")
    out = subprocess.run([sys.executable, "-c", script, "ingest", str(results.parent), "--db",
                          f"sqlite:///{tmp_path / 'db.sqlite'}", "--project", str(REPO)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert "ingested 1 file(s) holding 7 result(s)" in out.stderr
