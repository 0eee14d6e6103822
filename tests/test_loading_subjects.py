"""The loading subjects at size tiny: fixtures, equivalent variants, broken ones caught, claims."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from proofbench.declare import Context, Subject, Workload
from proofbench.errors import InputError
from proofbench.registry import REGISTRY
from proofbench.subjects import loading  # registers the two subjects (other areas are not needed here)
from proofbench.subjects.workloads.proteins import generate_proteins

KEYS = ("loading.lmdb_read", "loading.fasta_to_lmdb")


def _subject(key: str) -> Subject:
    return REGISTRY.get(key)


def _prepare(subject: Subject, cache_dir: Path, size: str = "tiny") -> Workload:
    subject.build_cache(cache_dir, (subject.size(size),))
    return subject.prepare(Context(size=subject.size(size), device="cpu", cache_dir=cache_dir, threads=1))


def _sequences(subject_key: str, output: list) -> list[str]:
    # lmdb_read returns sequences; fasta_to_lmdb returns the store's (key, value) pairs.
    if subject_key == "loading.lmdb_read":
        return output
    return [value.decode() for _, value in output]


def test_both_subjects_are_registered_with_the_three_sizes():
    for key in KEYS:
        subject = _subject(key)
        assert [s.name for s in subject.sizes] == ["tiny", "small", "large"]
        assert [v.name for v in subject.variants] == ["baseline", "optimized"]
        assert subject.item == "sequence" and not subject.track_memory


@dataclass(frozen=True)
class TinyRun:
    """One subject prepared at size tiny, with one output of each variant."""

    key: str
    subject: Subject
    workload: Workload
    baseline: list
    optimized: list


@pytest.fixture(scope="module", params=KEYS)
def tiny(request, tmp_path_factory) -> TinyRun:
    # Shared by the tests below: the conversion baseline syncs to disk once per record.
    subject = _subject(request.param)
    workload = _prepare(subject, tmp_path_factory.mktemp(request.param))
    return TinyRun(request.param, subject, workload, subject.variant("baseline").run(workload.inputs),
                   subject.variant("optimized").run(workload.inputs))


def test_variants_agree_with_each_other_and_with_the_data(tiny):
    assert tiny.workload.items == 100
    value = tiny.subject.equivalence.compare(tiny.baseline, tiny.optimized)
    assert value == 0.0 and tiny.subject.equivalence.passes(value)
    expected = [r.sequence for r in generate_proteins(100)]
    assert _sequences(tiny.key, tiny.baseline) == _sequences(tiny.key, tiny.optimized) == expected


def test_calls_are_repeatable(tiny):
    assert tiny.subject.variant("baseline").run(tiny.workload.inputs) == tiny.baseline
    assert tiny.subject.variant("optimized").run(tiny.workload.inputs) == tiny.optimized


def _drop_last(output: list) -> list:
    return output[:-1]


def _alter_one(output: list) -> list:
    first = output[0]
    changed = first[:-1] + "W" if isinstance(first, str) else (first[0], first[1][:-1] + b"W")
    return [changed] + output[1:]


def _swap_two(output: list) -> list:
    return [output[1], output[0]] + output[2:]


@pytest.mark.parametrize("breakage,expected", [(_drop_last, 1.0), (_alter_one, 1.0), (_swap_two, 2.0)])
def test_a_broken_variant_fails_equivalence(tiny, breakage, expected):
    broken = breakage(list(tiny.optimized))
    value = tiny.subject.equivalence.compare(tiny.baseline, broken)
    assert value == expected
    assert not tiny.subject.equivalence.passes(value)


@pytest.mark.parametrize("tiny", ["loading.fasta_to_lmdb"], indirect=True)
def test_conversion_leaves_no_store_behind(tiny):
    assert list(tiny.workload.inputs.scratch.iterdir()) == []


def test_lmdb_read_can_be_prepared_twice_in_one_process(tmp_path):
    # py-lmdb refuses a second handle on one store; prepare shares the process's reader.
    subject = _subject("loading.lmdb_read")
    first = _prepare(subject, tmp_path)
    second = _prepare(subject, tmp_path)
    assert first.inputs.keys == second.inputs.keys
    assert subject.variant("baseline").run(second.inputs) == subject.variant("optimized").run(first.inputs)


def test_build_cache_is_idempotent_and_keeps_one_file_per_size(tmp_path):
    subject = _subject("loading.fasta_to_lmdb")
    sizes = (subject.size("tiny"),)
    subject.build_cache(tmp_path, sizes)
    fasta = loading.fasta_path(tmp_path, 100)
    stamp = fasta.stat().st_mtime_ns
    subject.build_cache(tmp_path, sizes)
    assert fasta.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proteins-100.fasta"]


@pytest.mark.parametrize("key,missing", [("loading.lmdb_read", "proteins-100.lmdb: no such LMDB store"),
                                         ("loading.fasta_to_lmdb", "proteins-100.fasta: FASTA fixture not found")])
def test_prepare_without_fixtures_names_the_missing_file(tmp_path, key, missing):
    subject = _subject(key)
    with pytest.raises(InputError, match=missing):
        subject.prepare(Context(size=subject.size("tiny"), device="cpu", cache_dir=tmp_path, threads=1))
