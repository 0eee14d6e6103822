"""The inference subjects at size tiny: every runnable variant is equivalent to its baseline,
a deliberately broken variant is caught, GPU-only variants say why they cannot run here,
and the drift metrics give the known answers on known vectors."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from proofbench import capability
from proofbench.declare import Context
from proofbench.errors import EquivalenceError
from proofbench.registry import REGISTRY
from proofbench.subjects import serving
from proofbench.subjects.workloads import minilm
from proofbench.subjects.workloads.embedding_cache import EmbeddingCache
from proofbench.subjects.workloads.esm_encoder import length_order
from proofbench.subjects.workloads.quality import cosine_rows, max_abs_diff, mean_cosine, min_cosine
from proofbench.subjects.workloads.request_batcher import ServedStream

# compile last: a model class first built after compiling (ESM) changes a transformers registry
# that Dynamo guards on, and the next compiled call would recompile (a test-only artifact:
# asv prepares one subject per process).
SUBJECTS = ("half_precision", "half_precision_latency", "attention_kernel", "embedding_cache",
            "embedding_cache_miss", "length_sorted_batches", "request_batching", "compile")


def _prepare(key: str, tmp: Path):
    subject = REGISTRY.get(f"inference.{key}")
    # The compile subject compiles only for the process measuring the compiled variant.
    variant = "compiled" if key == "compile" else "baseline"
    ctx = Context(size=subject.size("tiny"), device="cpu", cache_dir=tmp, threads=1, variant=variant)
    return subject, subject.prepare(ctx)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Each subject's tiny workload, prepared once for the module (compile: compiled once).

    One torch thread, as the quick profile runs: on a busy 2-core machine more threads
    only wait for each other.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("inference")
    yield {key: _prepare(key, tmp) for key in SUBJECTS}
    torch.set_num_threads(threads)


# -- quality drift metrics --------------------------------------------------------------

def test_cosine_of_identical_rows_is_one_and_of_orthogonal_rows_zero():
    a = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    b = torch.tensor([[3.0, 0.0, 0.0], [0.0, 0.0, 5.0]])
    assert cosine_rows(a, b).tolist() == pytest.approx([1.0, 0.0])
    assert min_cosine(a, b) == pytest.approx(0.0)
    assert mean_cosine(a, b) == pytest.approx(0.5)
    assert min_cosine(a, a) == pytest.approx(1.0)
    assert min_cosine(a, -a) == pytest.approx(-1.0)


def test_max_abs_diff_and_shape_mismatch():
    a = torch.zeros(2, 3)
    b = a.clone()
    b[1, 2] = -0.25
    assert max_abs_diff(a, a) == 0.0
    assert max_abs_diff(a, b) == 0.25
    assert max_abs_diff(a, b.to(torch.bfloat16)) == 0.25  # compared in float32 whatever the dtype
    with pytest.raises(EquivalenceError, match=r"expected \(2, 3\), got \(3, 2\)"):
        max_abs_diff(a, torch.zeros(3, 2))


# -- every variant that can run here is equivalent to its baseline ----------------------

def _runnable(subject):
    return [v for v in subject.variants if capability.missing(v.requires, "cpu") is None]


@pytest.mark.parametrize("key", SUBJECTS)
def test_variants_are_equivalent_to_the_baseline_and_repeatable(prepared, key):
    subject, workload = prepared[key]
    expected = subject.variant("baseline").run(workload.inputs)
    for variant in _runnable(subject):
        value = subject.equivalence.compare(expected, variant.run(workload.inputs))
        assert subject.equivalence.passes(value), f"{variant.name}: {subject.equivalence.metric.name}={value}"
    again = subject.equivalence.compare(expected, subject.variant("baseline").run(workload.inputs))
    assert subject.equivalence.passes(again)
    for measure in subject.measures:
        assert math.isfinite(measure.measure(workload.inputs, expected))


# -- deliberately broken variants fail -------------------------------------------------

def _mask_ignored(inputs):
    # A classic pooling bug: the mean runs over padding positions too.
    with torch.inference_mode():
        hidden = inputs.fp32(**inputs.batch).last_hidden_state
        return hidden.mean(dim=1)


def _half_context(inputs):
    # An "attention kernel" that only sees the first half of each sequence.
    half = {name: t[:, : t.shape[1] // 2] for name, t in inputs.batch.items()}
    with torch.inference_mode():
        return minilm.embed(inputs.sdpa, half)


def _cache_keyed_on_first_word(inputs):
    # A cache key that collides: every request starting with the same word shares an entry.
    cache = EmbeddingCache(inputs.capacity)
    rows = [cache.get_or_compute(text.split()[0], lambda _, t=text: inputs.encoder.embed_text(t))
            for text in inputs.stream]
    return serving.StreamEmbeddings(torch.stack(rows), 0, 0, 0)


def _sorted_not_restored(inputs):
    # Sorting by length and forgetting to put the rows back in input order.
    order = length_order(inputs.sequences)
    out = inputs.encoder.embed_in_batches(inputs.sequences, order, inputs.batch_size)
    return type(out)(out.values[order], out.padded_tokens, out.real_tokens)


def _answers_to_the_wrong_caller(inputs):
    served = REGISTRY.get("inference.request_batching").variant("dynamic_batching").run(inputs)
    return ServedStream(served.responses[::-1], served.latencies, served.batch_sizes)


@pytest.mark.parametrize("key, broken", [
    ("half_precision", _mask_ignored),
    ("attention_kernel", _half_context),
    ("embedding_cache", _cache_keyed_on_first_word),
    ("length_sorted_batches", _sorted_not_restored),
    ("request_batching", _answers_to_the_wrong_caller),
])
def test_a_broken_variant_fails_equivalence(prepared, key, broken):
    subject, workload = prepared[key]
    expected = subject.variant("baseline").run(workload.inputs)
    assert not subject.equivalence.passes(subject.equivalence.compare(expected, broken(workload.inputs)))


# -- what the subjects report ----------------------------------------------------------

def test_cache_hit_rate_is_the_declared_repeat_rate(prepared):
    for key, rate in (("embedding_cache", 0.5), ("embedding_cache_miss", 0.0)):
        subject, workload = prepared[key]
        out = subject.variant("lru_cache").run(workload.inputs)
        assert out.hits / (out.hits + out.misses) == rate
        assert out.cache_bytes == out.misses * minilm.EMBEDDING_DIM * 4  # float32 rows, no eviction


def test_length_sorting_pads_fewer_tokens_for_the_same_real_tokens(prepared):
    subject, workload = prepared["length_sorted_batches"]
    base = subject.variant("baseline").run(workload.inputs)
    opt = subject.variant("length_sorted").run(workload.inputs)
    assert opt.real_tokens == base.real_tokens
    assert opt.padded_tokens < base.padded_tokens


def test_one_at_a_time_never_batches_and_latencies_are_reported(prepared):
    subject, workload = prepared["request_batching"]
    out = subject.variant("baseline").run(workload.inputs)
    assert set(out.batch_sizes) == {1}
    assert len(out.latencies) == workload.items and min(out.latencies) > 0
    p50, p99 = (m.measure(workload.inputs, out) for m in subject.measures[:2])
    assert 0 < p50 <= p99


def test_compile_seconds_are_reported_for_the_compiled_variant_only(prepared):
    subject, workload = prepared["compile"]
    if workload.inputs.compiled is None:
        pytest.skip(capability.missing(("compile",), "cpu"))
    (measure,) = subject.measures
    assert measure.measure(workload.inputs, subject.variant("baseline").run(workload.inputs)) == 0.0
    assert measure.measure(workload.inputs, subject.variant("compiled").run(workload.inputs)) > 0.0


# -- GPU-only variants and claims ------------------------------------------------------

def test_gpu_only_variants_declare_their_requirement_and_say_why_not_here():
    gpu = {("half_precision", "fp16"): "cuda", ("half_precision_latency", "fp16"): "cuda",
           ("attention_kernel", "flash"): "flash_attention"}
    for (key, name), requirement in gpu.items():
        variant = REGISTRY.get(f"inference.{key}").variant(name)
        assert requirement in variant.requires
        if not torch.cuda.is_available():
            assert "CUDA" in capability.missing(variant.requires, "cpu")
