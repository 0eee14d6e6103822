"""The quantization subjects at size tiny: sizes and drift are measured, the quality bound
catches a broken model, and variants name what they need."""
from __future__ import annotations

import copy
import math

import pytest
import torch

from proofbench import capability
from proofbench.declare import Context
from proofbench.registry import REGISTRY
from proofbench.subjects import quantization
from proofbench.subjects.quantization import QuantizedEmbeddings, serialized_bytes
from proofbench.subjects.workloads import minilm


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Each quantization subject's tiny workload, on one torch thread as the quick profile."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("quantization")
    out = {}
    for key in ("dynamic_int8", "dynamic_int8_latency", "static_int8"):
        subject = REGISTRY.get(f"quantization.{key}")
        out[key] = subject, subject.prepare(Context(subject.size("tiny"), "cpu", tmp, 1))
    yield out
    torch.set_num_threads(threads)


def test_serialized_bytes_counts_the_weights():
    layer = torch.nn.Linear(100, 100)
    assert 101 * 100 * 4 <= serialized_bytes(layer) < 101 * 100 * 4 + 4096


@pytest.mark.parametrize("key", ["dynamic_int8", "dynamic_int8_latency", "static_int8"])
def test_every_variant_reports_size_and_drift(prepared, key):
    subject, workload = prepared[key]
    base = subject.variant("baseline").run(workload.inputs)
    assert subject.equivalence.compare(base, subject.variant("baseline").run(workload.inputs)) > 0.99999
    fp32_bytes = base.model_bytes
    for variant in subject.variants[1:]:
        if capability.missing(variant.requires, "cpu"):
            continue
        out = variant.run(workload.inputs)
        drift = subject.equivalence.compare(base, out)
        assert -1.0 <= drift <= 1.0 + 1e-6
        assert subject.equivalence.passes(drift) == (drift >= quantization.SLIGHT_IMPACT_COSINE)
        assert out.model_bytes < fp32_bytes  # int8 Linear weights are smaller than fp32 ones
        for measure in subject.measures:
            assert math.isfinite(measure.measure(workload.inputs, out))


def test_int8_shrinks_the_linear_weights_but_not_the_embeddings(prepared):
    subject, workload = prepared["dynamic_int8"]
    if capability.missing(("int8_cpu",), "cpu"):
        pytest.skip(capability.missing(("int8_cpu",), "cpu"))
    sizes = workload.inputs.model_bytes
    embeddings = workload.inputs.models["baseline"].embeddings.word_embeddings.weight.nbytes
    assert embeddings < sizes["int8"] < sizes["baseline"]


def test_torchao_weight_only_stays_within_the_slight_impact_bound(prepared):
    subject, workload = prepared["dynamic_int8"]
    reason = capability.missing(("torchao",), "cpu")
    if reason:
        pytest.skip(reason)
    base = subject.variant("baseline").run(workload.inputs)
    assert subject.equivalence.passes(subject.equivalence.compare(base, subject.variant("torchao_int8").run(
        workload.inputs)))


def test_a_broken_model_fails_the_quality_bound(prepared):
    # A quantizer bug that zeroes the last layer's output projection.
    subject, workload = prepared["dynamic_int8"]
    broken = copy.deepcopy(workload.inputs.models["baseline"])
    torch.nn.init.zeros_(broken.encoder.layer[-1].output.dense.weight)
    with torch.inference_mode():
        values = minilm.embed(broken, workload.inputs.batch)
    base = subject.variant("baseline").run(workload.inputs)
    assert not subject.equivalence.passes(subject.equivalence.compare(base, QuantizedEmbeddings(values, 0)))


def test_a_variant_whose_model_could_not_be_built_skips_with_the_reason(prepared):
    subject, workload = prepared["static_int8"]
    inputs = quantization.QuantizedInputs({"baseline": workload.inputs.models["baseline"]}, {}, {},
                                          workload.inputs.reference, {"int8_static": "no engine here"})
    with pytest.raises(NotImplementedError, match="no engine here"):  # proofbench.errors.Skip
        subject.variant("int8_static").run(inputs)


def test_variants_declare_their_capabilities():
    dynamic = REGISTRY.get("quantization.dynamic_int8")
    assert dynamic.variant("int8").requires == ("int8_cpu",)
    assert dynamic.variant("torchao_int8").requires == ("torchao",)
    assert REGISTRY.get("quantization.static_int8").variant("int8_static").requires == ("int8_cpu",)
