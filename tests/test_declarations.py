"""The declaration API refuses bad subjects, profiles and claims with one clear line each."""
from __future__ import annotations

import pytest
from conftest import REPO, catalogue_registry

from proofbench.claim import load_claims
from proofbench.declare import Equivalence, Metric, Size, Subject, Variant, Workload
from proofbench.errors import DeclarationError, InputError
from proofbench.profile import get_profile, load_profiles
from proofbench.registry import Registry
from proofbench.reports.formatting import promise

SIZES = (Size.of("tiny", n=1), Size.of("small", n=2), Size.of("large", n=3))
SAME = Equivalence(Metric("diff", "abs", False), 0.0, compare=lambda a, b: abs(a - b))


def _subject(**changes):
    fields = dict(area="loading", name="demo", item="record", description="demo",
                  prepare=lambda ctx: Workload(inputs=ctx.size["n"], items=1),
                  variants=(Variant("baseline", lambda x: x), Variant("optimized", lambda x: x)),
                  equivalence=SAME, sizes=SIZES)
    fields.update(changes)
    return Subject(**fields)


def test_a_valid_subject_declares():
    subject = _subject()
    assert subject.key == "loading.demo"
    assert subject.variant("optimized").name == "optimized"
    assert subject.size("small")["n"] == 2


def test_an_area_is_any_module_name_and_nothing_else():
    assert _subject(area="preprocessing").key == "preprocessing.demo"
    with pytest.raises(DeclarationError, match=r"subject Pre-Processing\.demo: area must match"):
        _subject(area="Pre-Processing")


def test_missing_baseline_is_refused():
    with pytest.raises(DeclarationError, match="no variant named 'baseline'"):
        _subject(variants=(Variant("fast", lambda x: x), Variant("faster", lambda x: x)))


def test_variant_without_the_subjects_signature_is_refused():
    with pytest.raises(DeclarationError, match=r"loading\.demo: variant 'optimized' takes 2 positional"):
        _subject(variants=(Variant("baseline", lambda x: x), Variant("optimized", lambda x, y: x)))


def test_missing_size_is_refused():
    with pytest.raises(DeclarationError, match="missing large"):
        _subject(sizes=SIZES[:2])


def test_a_size_declared_twice_is_refused():
    # asv measured the first of two sizes named alike, and nothing said so
    with pytest.raises(DeclarationError, match=r"loading\.demo: duplicate size names in \['tiny', 'tiny', "):
        _subject(sizes=(Size.of("tiny", n=500), *SIZES))


def test_unknown_requirement_is_refused():
    with pytest.raises(DeclarationError, match="unknown requirement"):
        Variant("fp16", lambda x: x, requires=("tpu",))


def test_registry_refuses_duplicate_names():
    registry = Registry()
    registry.register(_subject())
    with pytest.raises(DeclarationError, match=r"subject loading\.demo: registered twice"):
        registry.register(_subject())


def test_unknown_subject_and_area_lookups_say_what_exists():
    registry = Registry()
    registry.register(_subject())
    with pytest.raises(DeclarationError, match="known: loading.demo"):
        registry.get("loading.nothing")
    assert registry.area("cooking") == [] and registry.areas() == ["loading"]


def test_equivalence_direction():
    cosine = Equivalence(Metric("cosine", "cosine", True), 0.99, compare=lambda a, b: 1.0)
    assert cosine.passes(0.995) and not cosine.passes(0.9) and not cosine.passes(float("nan"))
    assert SAME.passes(0.0) and not SAME.passes(1e-9)


def test_the_real_registry_loads_and_every_subject_has_a_benchmark():
    from proofbench.pipeline.generate import benchmark_index, generate

    registry = catalogue_registry()
    assert "loading.lmdb_read" in registry and "loading.fasta_to_lmdb" in registry
    index = benchmark_index(registry)
    assert {info.subject.key for info in index.values()} == {s.key for s in registry}
    assert generate(registry, REPO / "benchmarks", check=True) == [], "benchmarks/ is stale: run `proofbench generate`"


def test_bench_accepts_subject_names_as_well_as_asv_regexes():
    import re

    from proofbench.pipeline.generate import bench_pattern

    registry = catalogue_registry()
    for text in ("lmdb_read", "loading.lmdb_read"):
        pattern = bench_pattern(registry, text)
        assert re.search(pattern, "loading.LmdbRead.time_call") and not re.search(pattern, "loading.FastaToLmdb.x")
    both = bench_pattern(registry, "compile")  # a name two areas use: both subjects
    assert re.search(both, "training.Compile.track_speedup") and re.search(both, "inference.Compile.time_call")
    assert bench_pattern(registry, r"^loading\.") == r"^loading\."  # anything else is asv's regex as is


def test_profiles_declare_threads_and_sizes():
    quick = get_profile("quick")
    assert quick.threads == 1 and quick.sizes == ("small",) and quick.device == "cpu"
    assert get_profile("gpu").device == "cuda"


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(DeclarationError, match="unknown profile 'fast'; expected one of smoke, quick, full, gpu"):
        get_profile("fast")


@pytest.mark.parametrize("text, message", [
    ("[quick\n", "not valid TOML"),
    ("[quick]\ndescription='x'\n", "[quick] is missing key 'device'"),
    ("[q]\ndescription='x'\ndevice='tpu'\nthreads=1\nsizes=['tiny']\nrounds=1\nrepeat=[1,2,1.0]\nwarmup_time=0\n",
     "device must be one of cpu, cuda"),
    ("[q]\ndescription='x'\ndevice='cpu'\nthreads='one'\nsizes=['tiny']\nrounds=1\nrepeat=[1,2,1.0]\nwarmup_time=0\n",
     "[q].threads has the wrong type"),
])
def test_malformed_profiles_name_file_and_key(tmp_path, text, message):
    path = tmp_path / "profiles.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_profiles(path)
    assert str(path) in str(err.value) and message in str(err.value)


CLAIM = """[[claim]]
id = "a"
subject = "loading.lmdb_read"
variant = "optimized"
source = "000_745d506383ab88bc.txt"
quote = "5x faster"
kind = "speedup"
metric = "time"
low = 5.0
"""


@pytest.mark.parametrize("text, message", [
    ("[[claim]\n", "not valid TOML"),
    ("title = 'x'\n", "expected an array of [[claim]] tables"),
    (CLAIM.replace('kind = "speedup"', 'kind = "vibes"'), "claim #1 (a): kind 'vibes' must be one of"),
    (CLAIM.replace('quote = "5x faster"\n', ""), "claim #1 (a): key 'quote' must be a non-empty string"),
    (CLAIM.replace("low = 5.0", "low = 'five'"), "claim #1 (a): key 'low' must be a number"),
    (CLAIM.replace("low = 5.0\n", ""), "a speedup claim needs 'low'"),
    (CLAIM + CLAIM, "claim id 'a' appears twice"),
    (CLAIM.replace("low = 5.0", "low = 5.0\ncolour = 'red'"), "unknown key(s) colour"),
])
def test_malformed_claims_name_file_and_key(tmp_path, text, message):
    path = tmp_path / "claims.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_claims(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_claim_promise_reads_as_the_document_promised():
    from proofbench.claim import Claim

    base = dict(id="x", subject="s.t", variant="optimized", source="000.txt", quote="q", metric="time")
    assert promise(Claim(kind="speedup", low=2.0, high=3.0, **base)) == "2-3x faster"
    assert promise(Claim(kind="speedup", low=1.0, high=1.0, **base)) == "faster (no figure given)"
    assert promise(Claim(kind="throughput", low=5000.0, high=5000.0, **base)) == "5000 items/s"
    assert promise(Claim(kind="memory_reduction", low=0.3, high=0.5, **{**base, "metric": "peak_memory"})) \
        == "30%-50% less peak memory"
    assert promise(Claim(kind="quality", **base)) == "quality kept"


def test_a_rate_verdict_names_its_unit_once():
    # "823k/s" then a reason of "sequences/s": the unit came apart from its figure
    from proofbench.analysis.verdict import Verdict, Why
    from proofbench.reports.formatting import verdict_figure, verdict_reason

    reached = Verdict("reproduced", "throughput", Why.RATE_REACHED, 823_000.0, promised=2000.0, detail="sequence")
    assert (verdict_figure(reached), verdict_reason(reached)) == ("823k sequences/s", "")
    short = Verdict("partly", "throughput", Why.RATE_SHORT, 1500.0, baseline=500.0, promised=2000.0,
                    detail="sequence")
    assert (verdict_figure(short), verdict_reason(short)) == ("1.5k sequences/s", "baseline 500 sequences/s")
    saved = Verdict("reproduced", "memory_reduction", Why.REDUCTION, 0.7, baseline=1.023e8, measured=3.052e7,
                    promised=0.5, detail="peak_memory")
    assert verdict_reason(saved) == "peak_memory: 97.6 MiB -> 29.1 MiB"  # not 1.023e+08 -> 3.052e+07


def test_an_equivalence_verdict_shows_no_claim_figure():
    # An equivalence failure carries the equivalence metric (a cosine of 0.92), which is no speedup:
    # "0.92x" beside a speed claim would read as a measured slowdown.
    from proofbench.analysis.verdict import Verdict, Why
    from proofbench.reports.formatting import verdict_figure, verdict_reason

    failed = Verdict("equivalence failed", "speedup", Why.OUTSIDE_TOLERANCE, value=0.9204, tolerance=0.99,
                     detail="min_cosine")
    assert verdict_figure(failed) == "—"
    assert verdict_reason(failed) == "min_cosine 0.9204 outside tolerance 0.99"
    assert verdict_figure(Verdict("reproduced", "speedup", Why.SIGNIFICANT, value=2.14, low=2.05, high=2.24)) != "—"
