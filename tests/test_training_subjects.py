"""The training subjects (and loading.dataloader) at size tiny: equivalence, broken variants, GPU skips, claims."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from conftest import catalogue_registry

from proofbench import capability
from proofbench.declare import Context, Subject, Workload
from proofbench.errors import DeclarationError, Skip
from proofbench.registry import REGISTRY
from proofbench.subjects.workloads import trainer
from proofbench.subjects.workloads.attention import CachedMask, causal_mask
from proofbench.subjects.workloads.compiled_model import compile_warm
from proofbench.subjects.workloads.trainer import TrainingRun, accumulate, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")
catalogue_registry()  # every area module, in the registry's order, before naming any subject module
from proofbench.subjects import training  # noqa: E402

KEYS = ("training.mixed_precision", "training.gradient_checkpointing", "training.fused_optimizer",
        "training.causal_mask_cache", "training.memory_queries", "training.grad_accumulation",
        "loading.dataloader")
# Variants doing the very same arithmetic as the baseline: on CPU the outputs are bit-identical.
EXACT_ON_CPU = ("training.gradient_checkpointing", "training.causal_mask_cache", "training.memory_queries",
                "loading.dataloader")
GPU_ONLY = (("training.mixed_precision", "fp16"), ("training.mixed_precision", "tf32"),
            ("loading.dataloader", "pinned"))


def _prepare(key: str, cache_dir: Path, variant: str = "baseline") -> tuple[Subject, Workload]:
    subject = REGISTRY.get(key)
    if subject.build_cache is not None:
        subject.build_cache(cache_dir, (subject.size("tiny"),))
    ctx = Context(size=subject.size("tiny"), device="cpu", cache_dir=cache_dir, threads=1, variant=variant)
    return subject, subject.prepare(ctx)


def _runnable(subject: Subject) -> list:
    return [v for v in subject.variants if capability.missing(v.requires, "cpu") is None]


def _fails(subject: Subject, baseline: object, broken: object) -> bool:
    return not subject.equivalence.passes(subject.equivalence.compare(baseline, broken))


@pytest.mark.parametrize("key", KEYS)
def test_every_runnable_variant_is_equivalent_and_repeatable(key, tmp_path):
    subject = REGISTRY.get(key)
    for variant in _runnable(subject):
        _, work = _prepare(key, tmp_path, variant.name)  # as the benchmark process of that variant does
        baseline = subject.variant("baseline").run(work.inputs)
        first, second = variant.run(work.inputs), variant.run(work.inputs)
        assert subject.equivalence.compare(first, second) == 0.0, variant.name  # a call is repeatable
        value = subject.equivalence.compare(baseline, first)
        assert subject.equivalence.passes(value), (variant.name, value)
        assert value == 0.0 or key not in EXACT_ON_CPU, (variant.name, value)
    assert work.items > 0 and [s.name for s in subject.sizes] == ["tiny", "small", "large"]


@pytest.mark.parametrize("key", ["training.mixed_precision", "training.gradient_checkpointing",
                                 "training.memory_queries"])
def test_a_different_learning_rate_is_caught(key, tmp_path):
    subject, run = _prepare(key, tmp_path)
    baseline = subject.variant("baseline").run(run.inputs)
    assert _fails(subject, baseline, train(run.inputs, lr=2 * run.inputs.lr))


def test_an_optimizer_with_a_different_learning_rate_is_caught(tmp_path):
    subject, work = _prepare("training.fused_optimizer", tmp_path)
    baseline = subject.variant("baseline").run(work.inputs)
    faster = dataclasses.replace(work.inputs, lr=2 * work.inputs.lr)
    assert _fails(subject, baseline, training._adamw_fused(faster))


def test_accumulation_that_forgets_to_divide_the_loss_is_caught(tmp_path):
    subject, work = _prepare("training.grad_accumulation", tmp_path)
    baseline = subject.variant("baseline").run(work.inputs)
    summed = accumulate(work.inputs.run, work.inputs.micro_batches, loss_scale=1.0)
    assert _fails(subject, baseline, summed)
    assert torch.allclose(summed.gradient, baseline.gradient * work.inputs.micro_batches, atol=1e-5)


def test_a_mask_that_lets_tokens_see_ahead_is_caught(tmp_path):
    subject, work = _prepare("training.causal_mask_cache", tmp_path)
    baseline = subject.variant("baseline").run(work.inputs)
    work.inputs.model.masks = lambda n, device, dtype: torch.triu(
        torch.full((n, n), float("-inf"), dtype=dtype, device=device), diagonal=2)
    assert _fails(subject, baseline, training._forwards(work.inputs))


def test_a_loader_that_loses_a_batch_is_caught(tmp_path):
    subject, work = _prepare("loading.dataloader", tmp_path, "workers")
    baseline = subject.variant("baseline").run(work.inputs)
    batches = list(work.inputs.inline)[:-1]
    assert _fails(subject, baseline, train(work.inputs.run, batches=batches))
    assert work.inputs.workers.num_workers >= 1 and work.inputs.workers.persistent_workers
    assert work.inputs.workers._iterator is not None  # workers were started in prepare


class _Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)

    def forward(self, x: torch.Tensor) -> object:
        return dataclasses.make_dataclass("Out", ["loss"])(self.linear(x).pow(2).mean())


def test_batches_a_loader_yields_are_moved_to_the_runs_device(monkeypatch):
    """A DataLoader yields CPU tensors; on a GPU run each batch must reach the model's device.
    The training pipelines once fed a GPU model CPU batches (found on an H100); here the move
    itself is checked on the CPU."""
    moved = []
    real = trainer.to_device
    monkeypatch.setattr(trainer, "to_device",
                        lambda batch, device, *a: moved.append((batch, device)) or real(batch, device, *a))
    run = TrainingRun(_Tiny(), [])
    run.device = "cpu:0"  # what the run says its device is, not the default one
    loader = [{"x": torch.ones(4, 2)}, {"x": torch.zeros(4, 2)}]
    losses = train(run, batches=iter(loader))
    assert len(losses) == 2
    assert [(batch is source, device) for (batch, device), source in zip(moved, loader)] == [(True, "cpu:0")] * 2


def test_memory_queries_are_counted():
    run_steps = REGISTRY.get("training.memory_queries").size("tiny")["steps"]
    subject, work = _prepare("training.memory_queries", Path("."))
    (queries,) = subject.measures
    counts = {v.name: queries.measure(work.inputs, v.run(work.inputs)) for v in subject.variants}
    assert counts == {"baseline": run_steps, "once": 1}
    assert set(training.memory_snapshot("cpu")) == {"cpu_percent", "rss", "available"}


def test_cached_mask_is_built_once_per_length_device_and_dtype():
    cache = CachedMask()
    cpu = torch.device("cpu")
    first = cache(8, cpu, torch.float32)
    assert cache(8, cpu, torch.float32) is first
    assert cache(9, cpu, torch.float32) is not first and cache(8, cpu, torch.bfloat16).dtype == torch.bfloat16
    assert torch.equal(first, causal_mask(8, cpu, torch.float32)) and first[0, 1] == float("-inf")
    cache.clear()
    assert cache(8, cpu, torch.float32) is not first


@pytest.mark.parametrize("key, name", GPU_ONLY)
def test_gpu_only_variants_declare_cuda_and_are_skipped_here_with_a_reason(key, name):
    variant = REGISTRY.get(key).variant(name)
    assert "cuda" in variant.requires
    reason = capability.missing(variant.requires, "cpu")
    assert reason and "CUDA" in reason


def test_compile_is_equivalent_and_reports_its_compile_seconds(tmp_path):
    reason = capability.missing(("compile",), "cpu")
    if reason:
        pytest.skip(reason)
    subject, work = _prepare("training.compile", tmp_path, "compiled")
    baseline, compiled = subject.variant("baseline").run(work.inputs), subject.variant("compiled").run(work.inputs)
    assert subject.equivalence.passes(subject.equivalence.compare(baseline, compiled))
    assert _fails(subject, baseline, train(work.inputs.run, forward=work.inputs.compiled, lr=2e-3))
    (seconds,) = subject.measures
    assert seconds.measure(work.inputs, compiled) > 0 and seconds.measure(work.inputs, baseline) == 0


def test_compile_seconds_are_read_once_the_gpu_is_done(monkeypatch):
    # On a GPU the first call's kernels are still queued when it returns: without a synchronise
    # they would be timed in the warm call and compiling would look cheaper than it was.
    log = []
    monkeypatch.setattr(torch, "compile", lambda model: model)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("sync"))
    model = torch.nn.Linear(2, 2)
    done = compile_warm(model, lambda module: log.append("call"))
    assert log == ["sync", "call", "sync"] * 2 and done.module is model
    ticks = iter([0.0, 9.0, 10.0, 10.5])
    assert compile_warm(model, lambda module: None, clock=lambda: next(ticks)).compile_seconds == 8.5


def test_compile_failure_is_a_skip_with_the_reason(monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("no C++ compiler here\nsecond line")

    monkeypatch.setattr(torch, "compile", refuse)
    with pytest.raises(Skip, match="torch.compile failed on this machine: RuntimeError: no C\\+\\+ compiler here$"):
        _prepare("training.compile", Path("."), "compiled")
    subject, work = _prepare("training.compile", Path("."))  # the baseline's process compiles nothing
    assert work.inputs.compiled is None and subject.variant("baseline").run(work.inputs).losses.numel() == 2
    with pytest.raises(DeclarationError, match="prepare it with Context\\(variant='compiled'\\)"):
        subject.variant("compiled").run(work.inputs)
