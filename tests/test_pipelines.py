"""The whole pipelines at size tiny: every variant runs and is equivalent to its baseline, the
ablation variants turn exactly their part on or off and that changes what runs, every part
names a real subject variant, and the profiles keep the pipelines (and ESM-2 650M) apart."""
from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import torch
from conftest import catalogue_registry

from proofbench import capability
from proofbench.declare import Context, Subject
from proofbench.errors import DeclarationError
from proofbench.profile import load_profiles
from proofbench.subjects.workloads import esm2ae_pipeline, serving_pipeline
from proofbench.subjects.workloads.composition import parts_of, whole
from proofbench.subjects.workloads.trainer import train

pytestmark = pytest.mark.usefixtures("one_torch_thread")
REGISTRY = catalogue_registry()
PIPELINES = ("esm2ae_training", "cafa_embeddings", "email_training", "openllm_training", "agi2_training",
             "openllm_serving")
# What each part changes in a run's `observed` record: (key, value with the part on).
OBSERVED = {"bf16": ("autocast", "torch.bfloat16"), "checkpointing": ("checkpointing", True),
            "workers": ("workers", 2), "compile": ("compiled", True), "fused_optimizer": ("fused", True),
            "grad_accumulation": ("micro_batches", 4), "mask_cache": ("mask", "CachedMask"),
            "memory_queries": ("memory_queries", 1),
            "length_sorted": ("order", "length"), "inference_mode": ("grad_mode", "inference_mode"),
            "int8": ("int8", True), "embedding_cache": ("cache", True), "request_batching": ("max_batch", 4)}
SEEN_AS = {"cafa_embeddings": {"bf16": ("dtype", "torch.bfloat16")}}  # bf16 weights, not autocast
# Parts whose effect is a function the pipeline calls (spied on below) rather than a setting.
CALLED = {"batched_writes": "put_records", "cursor_reads": "cursor_batches", "fast_tokenizer": "ids_batched"}


def _subject(name: str) -> Subject:
    return REGISTRY.get(f"pipelines.{name}")


def _prepare(subject: Subject, cache: Path, variant: str):
    size = subject.size("tiny")
    if subject.build_cache is not None:
        subject.build_cache(cache, (size,))
    return subject.prepare(Context(size=size, device="cpu", cache_dir=cache, threads=1, variant=variant)).inputs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Each pipeline's runnable variants' outputs, each workload prepared as that variant's process
    prepares it, computed once for the module. torch.compile runs with Dynamo's eager backend: the
    variants' compile path traced for real, without inductor's minutes of code generation
    (training.compile and inference.compile test inductor)."""
    cache = tmp_path_factory.mktemp("pipelines")
    done: dict[str, dict] = {}

    def of(name: str) -> dict:
        if name not in done:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
                done[name] = _run_all(_subject(name), cache)
        return done[name]

    return of


def _run_all(subject: Subject, cache: Path) -> dict:
    out, work = {}, None
    for variant in subject.variants:
        if capability.missing(variant.requires, "cpu") is None:
            if work is None or set(variant.parts) & {"compile", "bf16", "workers", "int8"}:
                work = _prepare(subject, cache, variant.name)
            out[variant.name] = variant.run(work)
    return out


@pytest.mark.parametrize("name", PIPELINES)
def test_every_variant_runs_and_is_equivalent_to_the_baseline(name, outputs):
    subject, ran = _subject(name), outputs(name)
    assert set(ran) == {v.name for v in subject.variants}, "every variant runs on a CPU"
    equivalence = subject.equivalence
    for variant, out in ran.items():
        value = equivalence.compare(ran["baseline"], out)
        if "int8" in parts_of(subject.variants, variant):
            # dynamic int8 turns each embedding a few degrees (its scales follow each batch); whether that
            # is the seed's "slight impact" is the run's finding, as for quantization.dynamic_int8
            assert 0.8 < value <= 1.0, (variant, value)
        else:
            assert equivalence.passes(value), (variant, value)


@pytest.mark.parametrize("name", PIPELINES)
def test_the_ablation_turns_exactly_one_part_on_or_off(name):
    subject = _subject(name)
    everything = set(whole(subject.parts))
    assert subject.variant("baseline").parts == () and set(subject.variant("optimized").parts) == everything
    for part in subject.parts:
        if part.left_out:
            assert f"only_{part.name}" not in [v.name for v in subject.variants]
            continue
        assert subject.variant(f"only_{part.name}").parts == (part.name,)
        assert set(subject.variant(f"without_{part.name}").parts) == everything - {part.name}
        assert set(part.requires) <= set(subject.variant(f"only_{part.name}").requires)


@pytest.mark.parametrize("name", PIPELINES)
def test_every_part_names_a_subject_variant_that_measures_it_alone(name):
    for part in _subject(name).parts:
        alone = REGISTRY.get(part.subject).variant(part.variant)
        assert alone.name != "baseline", part.name
        assert part.left_out or "cuda" not in part.requires, f"{part.name}: a GPU-only part must say it is left out"


@pytest.mark.parametrize("name", [n for n in PIPELINES if n != "esm2ae_training"])
def test_turning_a_part_on_changes_what_runs(name, outputs):
    subject, ran = _subject(name), outputs(name)
    for part in whole(subject.parts):
        key, on = {**OBSERVED, **SEEN_AS.get(name, {})}[part]
        assert ran["baseline"].observed[key] != on, (part, ran["baseline"].observed)
        assert ran[f"only_{part}"].observed[key] == on, (part, ran[f"only_{part}"].observed)
        assert ran[f"without_{part}"].observed[key] != on, (part, ran[f"without_{part}"].observed)


def test_each_part_of_the_esm2ae_pipeline_changes_what_runs(tmp_path, monkeypatch):
    subject = _subject("esm2ae_training")
    work = _prepare(subject, tmp_path, "optimized")
    calls: list[str] = []
    for function in CALLED.values():
        real = getattr(esm2ae_pipeline, function)
        monkeypatch.setattr(esm2ae_pipeline, function,
                            lambda *a, _real=real, _name=function, **k: calls.append(_name) or _real(*a, **k))
    for part in whole(subject.parts):
        calls.clear()
        only, base = subject.variant(f"only_{part}").run(work), subject.variant("baseline").run(work)
        if part in CALLED:
            assert calls.count(CALLED[part]) >= 1, part
        elif part == "dynamic_padding":
            assert only.trained < base.trained  # the sequences over 510 residues are filtered out
        else:
            key, on = OBSERVED[part]
            assert only.observed[key] == on and base.observed[key] != on, part


def test_a_training_pipeline_with_another_learning_rate_fails_its_equivalence(tmp_path):
    subject = _subject("agi2_training")
    work = _prepare(subject, tmp_path, "baseline")
    baseline = subject.variant("baseline").run(work)
    broken = train(work.run, batches=iter(work.inline), lr=10 * work.run.lr)
    assert not subject.equivalence.passes(subject.equivalence.compare(baseline, broken))


def test_a_variant_without_its_prepared_pieces_says_so(tmp_path):
    subject = _subject("email_training")
    work = _prepare(subject, tmp_path, "baseline")  # the baseline's process compiles nothing, starts no worker
    for variant in ("only_compile", "only_workers"):
        with pytest.raises(DeclarationError, match="prepared without"):
            subject.variant(variant).run(work)


def test_the_serving_cache_answers_repeats_without_embedding_them(tmp_path):
    subject = _subject("openllm_serving")
    work = _prepare(subject, tmp_path, "baseline")
    out = serving_pipeline.run_serving(frozenset({"embedding_cache"}), work)
    requests = sum(len(c) for c in work.clients)
    assert out.hits == requests - len({t for c in work.clients for t in c}) > 0


def test_650m_has_the_stated_shape_and_runs_only_in_its_own_profile():
    subject = _subject("esm2_650m_embeddings")
    size = subject.size("small")
    from transformers import EsmConfig, EsmModel

    from proofbench.subjects.workloads.esm_encoder import ESM_CONFIG
    config = EsmConfig(**{**ESM_CONFIG, "hidden_size": size["hidden"], "num_hidden_layers": size["layers"],
                          "num_attention_heads": size["heads"], "intermediate_size": 4 * size["hidden"]})
    with torch.device("meta"):  # counted without allocating 2.6 GB
        parameters = sum(p.numel() for p in EsmModel(config, add_pooling_layer=False).parameters())
    assert 640e6 < parameters < 660e6
    name = "pipelines.Esm2650mEmbeddings.time_call(optimized, small)"
    selected = {p.name for p in load_profiles().values() if re.search(p.bench, name)}
    assert selected == {"esm650m", "gpu"}


def test_quick_runs_no_pipeline_and_pipelines_runs_them_all():
    profiles = load_profiles()
    for name in PIPELINES:
        benchmark = f"pipelines.{''.join(w.capitalize() for w in name.split('_'))}.time_call(optimized, small)"
        assert not re.search(profiles["quick"].bench, benchmark)
        assert re.search(profiles["pipelines"].bench, benchmark)
    assert re.search(profiles["quick"].bench, "training.Compile.time_call(baseline, small)")


def test_every_headline_claim_names_the_gpu_only_parts_it_is_judged_without():
    from conftest import REPO

    from proofbench.claim import load_claims
    claims = [c for c in load_claims(REPO / "subjects" / "claims.toml") if c.subject.startswith("pipelines.")]
    assert {c.subject.split(".")[1] for c in claims} >= set(PIPELINES) - {"cafa_embeddings"}
    for claim in claims:
        subject = REGISTRY.get(claim.subject)
        on = set(subject.variant(claim.variant).parts)
        gpu_only = [p.name for p in subject.parts if p.name not in on and p.left_out.startswith("GPU-only")]
        assert all(name in claim.note for name in gpu_only), (claim.id, gpu_only)


def test_a_variant_naming_an_undeclared_part_is_refused():
    from proofbench import Equivalence, Part, Size, Variant
    from proofbench.subjects.workloads.composition import pipeline_variants
    from proofbench.subjects.workloads.trainer import LOSS_DELTA

    parts = (Part("cache", "inference.embedding_cache", "lru_cache"),)
    sizes = tuple(Size.of(n, n=1) for n in ("tiny", "small", "large"))

    def declare(*variants):
        return Subject(area="pipelines", name="x", item="call", description="", prepare=lambda ctx: None,
                       variants=variants, equivalence=Equivalence(LOSS_DELTA, 0.0, lambda a, b: 0.0), sizes=sizes,
                       parts=parts)

    assert [v.name for v in declare(*pipeline_variants(parts, lambda on, work: on)).variants] == \
        ["baseline", "optimized", "only_cache", "without_cache"]
    with pytest.raises(DeclarationError, match="unknown part\\(s\\) bf16; declared: cache"):
        declare(Variant("baseline", lambda w: w), Variant("fast", lambda w: w, parts=("bf16",)))
    with pytest.raises(DeclarationError, match="the baseline turns every part off; it names cache"):
        declare(Variant("baseline", lambda w: w, parts=("cache",)), Variant("fast", lambda w: w))
    with pytest.raises(DeclarationError, match="variant 'memory': unknown part\\(s\\) bf16"):
        pipeline_variants(parts, lambda on, work: on, wholes={"memory": ("bf16",)})
    with pytest.raises(DeclarationError, match="subject must be 'area.name'"):
        Part("cache", "embedding_cache", "lru_cache")
