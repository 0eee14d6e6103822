"""Quantization subjects: int8 all-MiniLM-L6-v2 on the CPU against fp32, for speed, size and drift.

Quantized kernels here are CPU kernels (fbgemm/x86/onednn), so these subjects run on the
CPU whatever device the profile names. Every variant embeds the same fixed sentences
under inference_mode; the output carries the model's serialized size (its state_dict
written by torch.save to memory), and the drift from fp32 is the equivalence metric:

- `dynamic_int8` (+ `dynamic_int8_latency` at batch 1): fp32 Linear layers vs
  `torch.ao.quantization.quantize_dynamic` int8 (weights int8, activations quantized per
  call), and torchao's int8 weight-only quantization where torchao is installed.
- `static_int8`: fp32 vs calibrated static int8 (eager mode: each Linear wrapped in
  quant/dequant stubs, observers calibrated on sentences the evaluation never sees). If
  torch cannot do it on this machine, prepare raises Skip with the error's text.

The quality bound is the seed's "slight impact": each sentence's int8 embedding must keep a
cosine similarity of at least 0.99 to its fp32 embedding (turned by at most 8 degrees).
Below that, nearest-neighbour results built on the embeddings start to change, which is
more than slight. torch 2.13 warns that torch.ao.quantization is deprecated in favour of
torchao; the warning is left visible.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import partial

import torch

from proofbench import Context, Equivalence, Measure, Metric, Size, Skip, Subject, Variant, Workload, register
from proofbench.capability import missing
from proofbench.subjects.workloads import minilm
from proofbench.subjects.workloads.quality import MEAN_COSINE, MIN_COSINE, SLIGHT_IMPACT_COSINE, mean_cosine, min_cosine
from proofbench.subjects.workloads.quantized import dynamic_int8, serialized_bytes

DEVICE = "cpu"
CALIBRATION_TEXTS = 32
MODEL_BYTES = Metric("model_bytes", "bytes", higher_is_better=False)


@dataclass(frozen=True)
class QuantizedInputs:
    """The model of each variant that could be built, its size, one batch, fp32's answer."""

    models: dict[str, torch.nn.Module]
    model_bytes: dict[str, int]
    batch: dict[str, torch.Tensor]
    reference: torch.Tensor
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class QuantizedEmbeddings:
    """Embeddings from one variant's model, and that model's serialized size in bytes."""

    values: torch.Tensor
    model_bytes: int


def _texts(size: Size) -> list[str]:
    join = size.get("join", 1)
    raw = minilm.distinct_sentences(size["n"] * join)
    return [" ".join(raw[i * join:(i + 1) * join]) for i in range(size["n"])]


def _workload(models: dict[str, torch.nn.Module], texts: list[str],
              unavailable: dict[str, str] | None = None) -> Workload:
    batch = minilm.tokenize(minilm.load_tokenizer(), texts, DEVICE)
    with torch.inference_mode():
        reference = minilm.embed(models["baseline"], batch)
    sizes = {name: serialized_bytes(model) for name, model in models.items()}
    return Workload(QuantizedInputs(models, sizes, batch, reference, unavailable or {}), items=len(texts))


def _embed_with(name: str, inputs: QuantizedInputs) -> QuantizedEmbeddings:
    model = inputs.models.get(name)
    if model is None:
        raise Skip(inputs.unavailable.get(name, f"the {name} model was not built on this machine"))
    with torch.inference_mode():
        return QuantizedEmbeddings(minilm.embed(model, inputs.batch), inputs.model_bytes[name])


# -- dynamic int8 ---------------------------------------------------------------------

def _torchao_int8(model: torch.nn.Module) -> torch.nn.Module:
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    quantized = copy.deepcopy(model)
    quantize_(quantized, Int8WeightOnlyConfig())
    return quantized


def _prepare_dynamic(ctx: Context) -> Workload:
    fp32 = minilm.load_model(device=DEVICE)
    models, unavailable = {"baseline": fp32}, {}
    if missing(("int8_cpu",), DEVICE) is None:
        models["int8"] = dynamic_int8(fp32)
    if missing(("torchao",), DEVICE) is None:
        try:
            models["torchao_int8"] = _torchao_int8(fp32)
        except Exception as exc:  # noqa: BLE001 - installed but unusable: the variant says why
            unavailable["torchao_int8"] = f"torchao int8 weight-only failed: {type(exc).__name__}: {exc}"
    return _workload(models, _texts(ctx.size), unavailable)


_QUALITY = Equivalence(
    MIN_COSINE, SLIGHT_IMPACT_COSINE, lambda a, b: min_cosine(a.values, b.values),
    "lowest per-sentence cosine similarity to fp32 >= 0.99: the seed promises 'slight impact'; an "
    "embedding turned by more than 8 degrees changes nearest-neighbour results, more than slight")
_MEASURES = (Measure(MODEL_BYTES, lambda inputs, out: float(out.model_bytes)),
             Measure(MEAN_COSINE, lambda inputs, out: mean_cosine(inputs.reference, out.values)))
_DYNAMIC_VARIANTS = (
    Variant("baseline", partial(_embed_with, "baseline"), "fp32 Linear layers, inference_mode"),
    Variant("int8", partial(_embed_with, "int8"), "torch.ao quantize_dynamic, qint8 Linear weights",
            requires=("int8_cpu",)),
    Variant("torchao_int8", partial(_embed_with, "torchao_int8"), "torchao quantize_(Int8WeightOnlyConfig())",
            requires=("torchao",)),
)
_NOTES = "runs on the CPU in every profile: the int8 kernels are CPU kernels"

register(Subject(
    area="quantization", name="dynamic_int8", item="sentence",
    description="MiniLM embeddings of a sentence batch on the CPU: fp32 vs dynamic int8 vs torchao int8",
    prepare=_prepare_dynamic, variants=_DYNAMIC_VARIANTS, equivalence=_QUALITY, measures=_MEASURES,
    sizes=(Size.of("tiny", n=2), Size.of("small", n=8), Size.of("large", n=256)), notes=_NOTES,
))
register(Subject(
    area="quantization", name="dynamic_int8_latency", item="sentence",
    description="MiniLM embedding of one request (batch 1) on the CPU: fp32 vs dynamic int8 vs torchao int8",
    prepare=_prepare_dynamic, variants=_DYNAMIC_VARIANTS, equivalence=_QUALITY, measures=_MEASURES,
    sizes=(Size.of("tiny", n=1), Size.of("small", n=1, join=2), Size.of("large", n=1, join=8)),
    notes=_NOTES + "; latency percentiles come from asv's raw per-call samples",
))


# -- static int8 ----------------------------------------------------------------------

def _wrap_linears(module: torch.nn.Module, qconfig: object) -> None:
    # Eager-mode static quantization needs quant/dequant stubs around what it quantizes;
    # QuantWrapper puts them around each Linear, the only layers with an int8 kernel here.
    for name, child in module.named_children():
        if isinstance(child, torch.nn.Linear):
            wrapped = torch.ao.quantization.QuantWrapper(child)
            wrapped.qconfig = qconfig
            setattr(module, name, wrapped)
        else:
            _wrap_linears(child, qconfig)


def static_int8(model: torch.nn.Module, calibration: dict[str, torch.Tensor]) -> torch.nn.Module:
    """A copy of `model` with every Linear statically quantized to int8, calibrated on a batch."""
    from torch.ao.quantization import convert, get_default_qconfig, prepare

    quantized = copy.deepcopy(model)
    _wrap_linears(quantized, get_default_qconfig(torch.backends.quantized.engine))
    prepare(quantized, inplace=True)
    with torch.inference_mode():
        minilm.embed(quantized, calibration)  # observers record activation ranges
    return convert(quantized, inplace=True)


def _prepare_static(ctx: Context) -> Workload:
    fp32 = minilm.load_model(device=DEVICE)
    texts = _texts(ctx.size)
    calibration = minilm.distinct_sentences(len(texts) + CALIBRATION_TEXTS)[len(texts):]
    models = {"baseline": fp32}
    if missing(("int8_cpu",), DEVICE) is None:
        try:
            models["int8_static"] = static_int8(fp32, minilm.tokenize(minilm.load_tokenizer(), calibration))
        except Exception as exc:  # noqa: BLE001 - the reason is the finding, recorded as a skip
            raise Skip(f"static int8 quantization failed here: {type(exc).__name__}: {exc}") from exc
    return _workload(models, texts)


register(Subject(
    area="quantization", name="static_int8", item="sentence",
    description="MiniLM embeddings on the CPU: fp32 vs calibrated static int8 Linear layers",
    prepare=_prepare_static,
    variants=(Variant("baseline", partial(_embed_with, "baseline"), "fp32 Linear layers, inference_mode"),
              Variant("int8_static", partial(_embed_with, "int8_static"),
                      f"Linear weights and activations int8, observers calibrated on {CALIBRATION_TEXTS} "
                      "other sentences", requires=("int8_cpu",))),
    equivalence=_QUALITY, measures=_MEASURES,
    sizes=(Size.of("tiny", n=2), Size.of("small", n=8), Size.of("large", n=256)), notes=_NOTES,
))
