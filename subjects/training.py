"""Training subjects: mixed precision, checkpointing, optimizers, compile, mask and memory habits.

Every subject trains a real transformers model (GPT-2 style causal LM or ESM-2 style masked
LM over protein tokens, see `subjects.models`) or seed 004's small causal model (see
`subjects.attention`) for a fixed number of AdamW steps per call, restarting from the same
weights and seed each call (see `subjects.trainer`). The data loader subject, of area
"loading", lives in `subjects.dataloading`; importing this module registers it too.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from proofbench import Context, Equivalence, Measure, Metric, Size, State, Subject, Variant, Workload, register
from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.attention import CachedMask, CausalLM, FreshMask
from proofbench.subjects.workloads.compiled_model import COMPILE_SECONDS, compile_warm
from proofbench.subjects.workloads.models import VOCAB_SIZE, causal_lm_batches, esm_mlm, gpt2_lm, mlm_batches
from proofbench.subjects.workloads.quality import MAX_ABS_DIFF
from proofbench.subjects.workloads.trainer import (
    LOSS_DELTA,
    MIXED_PRECISION_TOLERANCE,
    Accumulated,
    TrainingRun,
    accumulate,
    checkpointing,
    loss_delta,
    memory_snapshot,
    train,
)

# Loss tolerance for variants that do the same arithmetic: exact on CPU, but some GPU backward
# kernels add with atomics, so two identical runs may differ in the last bits there.
REPRODUCIBLE = 1e-4

# Model and batch shapes. tiny: tests (well under 1 s a call); small: quick profile on one
# CPU thread (~50-500 ms a call); large: nightly and GPU runs.
GPT2_SIZES = (
    Size.of("tiny", hidden=64, layers=2, heads=2, seq=64, batch=4, steps=2),
    Size.of("small", hidden=128, layers=2, heads=4, seq=128, batch=8, steps=3),
    Size.of("large", hidden=384, layers=6, heads=6, seq=256, batch=8, steps=3),
)


def _gpt2_run(ctx: Context) -> TrainingRun:
    s = ctx.size
    return TrainingRun(gpt2_lm(s["hidden"], s["layers"], s["heads"], s["seq"]),
                       causal_lm_batches(s["steps"], s["batch"], s["seq"]), device=ctx.device)


def _prepare_gpt2(ctx: Context) -> Workload:
    return Workload(inputs=_gpt2_run(ctx), items=ctx.size["steps"] * ctx.size["batch"])


# -- mixed_precision ---------------------------------------------------------------------

def _fp32(run: TrainingRun) -> torch.Tensor:
    return train(run)


def _bf16(run: TrainingRun) -> torch.Tensor:
    return train(run, autocast=torch.bfloat16)


def _fp16(run: TrainingRun) -> torch.Tensor:
    return train(run, autocast=torch.float16, scaled=True)


def _tf32(run: TrainingRun) -> torch.Tensor:
    before = torch.backends.cuda.matmul.fp32_precision
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    try:
        return train(run)
    finally:
        torch.backends.cuda.matmul.fp32_precision = before


register(Subject(
    area="training", name="mixed_precision", item="sequence",
    description="N AdamW steps of a GPT-2 style protein LM in fp32 vs autocast bf16 (fp16 + GradScaler, TF32 on GPU)",
    prepare=_prepare_gpt2,
    variants=(Variant("baseline", _fp32, "fp32 throughout"),
              Variant("bf16", _bf16, "torch.autocast bfloat16 forward, fp32 weights and optimizer",
                      requires=("bf16",)),
              Variant("fp16", _fp16, "torch.autocast float16 + GradScaler", requires=("cuda",)),
              Variant("tf32", _tf32, "fp32 with TF32 tensor-core matmuls", requires=("cuda",))),
    equivalence=Equivalence(LOSS_DELTA, MIXED_PRECISION_TOLERANCE, loss_delta,
                            "per-step training loss within 0.02 of fp32 (loss ~3.4; bf16 keeps 8 mantissa bits, "
                            "~0.4% per op; a 2x learning-rate change moves it by ~0.04 after two steps)"),
    sizes=GPT2_SIZES, track_memory=True,
))


# -- gradient_checkpointing --------------------------------------------------------------

def _prepare_esm(ctx: Context) -> Workload:
    s = ctx.size
    run = TrainingRun(esm_mlm(s["hidden"], s["layers"], s["heads"], s["seq"]),
                      mlm_batches(s["steps"], s["batch"], s["seq"]), device=ctx.device)
    return Workload(inputs=run, items=s["steps"] * s["batch"])


def _checkpointing_off(run: TrainingRun) -> torch.Tensor:
    run.model.activation_checkpointing_disable()
    return train(run)


def _checkpointing_on(run: TrainingRun) -> torch.Tensor:
    with checkpointing(run.model):
        return train(run)


register(Subject(
    area="training", name="gradient_checkpointing", item="sequence",
    description="N AdamW steps of an ESM-2 style masked LM with activation checkpointing off vs on",
    prepare=_prepare_esm,
    variants=(Variant("baseline", _checkpointing_off, "every activation kept for the backward pass"),
              Variant("checkpointed", _checkpointing_on,
                      "transformers activation checkpointing per layer (non-reentrant)")),
    equivalence=Equivalence(LOSS_DELTA, REPRODUCIBLE, loss_delta,
                            "losses within 1e-4: recomputation repeats the same fp32 arithmetic (identical on "
                            "CPU; GPU backward kernels with atomic adds are not bitwise reproducible)"),
    sizes=(Size.of("tiny", hidden=64, layers=2, heads=2, seq=64, batch=4, steps=2),
           Size.of("small", hidden=128, layers=4, heads=4, seq=256, batch=4, steps=2),
           Size.of("large", hidden=384, layers=6, heads=6, seq=512, batch=16, steps=3)),
    track_memory=True,
    notes="Peak memory is the headline: CPU RSS above the post-setup level, GPU max_memory_allocated.",
))


# -- fused_optimizer ---------------------------------------------------------------------

@dataclass
class OptimizerWork:
    """Parameters with fixed real gradients, their starting values, and the steps to take."""

    params: list[torch.Tensor]
    start: list[torch.Tensor]
    steps: int
    lr: float = 1e-3


def _prepare_optimizer(ctx: Context) -> Workload:
    s = ctx.size
    run = TrainingRun(gpt2_lm(s["hidden"], s["layers"], s["heads"], s["seq"]),
                      causal_lm_batches(1, s["batch"], s["seq"]), device=ctx.device)
    run.model(**run.batches[0]).loss.backward()  # one real backward pass; its gradients stay fixed
    params = list(run.model.parameters())
    work = OptimizerWork(params, [p.detach().clone() for p in params], s["steps"])
    return Workload(inputs=work, items=s["steps"])


def _adamw(work: OptimizerWork, **options: bool) -> torch.Tensor:
    with torch.no_grad():
        for param, start in zip(work.params, work.start):
            param.copy_(start)
    opt = torch.optim.AdamW(work.params, lr=work.lr, **options)
    for _ in range(work.steps):
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in work.params]).float().cpu()


def _adamw_loop(work: OptimizerWork) -> torch.Tensor:
    return _adamw(work, foreach=False)


def _adamw_foreach(work: OptimizerWork) -> torch.Tensor:
    return _adamw(work, foreach=True)


def _adamw_fused(work: OptimizerWork) -> torch.Tensor:
    return _adamw(work, fused=True)


def _max_abs_diff(base: torch.Tensor, other: torch.Tensor) -> float:
    return float((base - other).abs().max())


register(Subject(
    area="training", name="fused_optimizer", item="step",
    description="N AdamW steps over a GPT-2 style model's parameters: per-parameter loop vs foreach vs fused",
    prepare=_prepare_optimizer,
    variants=(Variant("baseline", _adamw_loop, "AdamW(foreach=False): one kernel chain per parameter"),
              Variant("foreach", _adamw_foreach, "AdamW(foreach=True): multi-tensor ops"),
              Variant("fused", _adamw_fused, "AdamW(fused=True): one fused kernel")),
    equivalence=Equivalence(MAX_ABS_DIFF, 1e-6, _max_abs_diff,
                            "parameters within 1e-6 after N steps (lr 1e-3: an update is ~1e-3 a step; "
                            "the variants differ only in float rounding order)"),
    sizes=(Size.of("tiny", hidden=64, layers=2, heads=2, seq=64, batch=4, steps=2),
           Size.of("small", hidden=256, layers=6, heads=4, seq=128, batch=4, steps=10),
           Size.of("large", hidden=768, layers=12, heads=12, seq=256, batch=4, steps=5)),
    notes="Times the optimizer step alone (gradients from one real backward pass, kept fixed): in a whole "
          "training step of the same model (4 x 128 tokens, CPU) the for-loop AdamW step is ~4% of the time.",
))


# -- compile -----------------------------------------------------------------------------

@dataclass
class CompiledRun:
    """A training run and, when prepared for the compiled variant, its `torch.compile`d model
    and the seconds compiling took (`compiled` is None in a baseline process)."""

    run: TrainingRun
    compiled: torch.nn.Module | None = None
    compile_seconds: float = 0.0


@dataclass(frozen=True)
class Trained:
    """Losses of one call, with the compile seconds paid before it (0 for eager)."""

    losses: torch.Tensor
    compile_seconds: float = 0.0


def _prepare_compile(ctx: Context) -> Workload:
    work = CompiledRun(_gpt2_run(ctx))
    if ctx.variant == "compiled":  # a baseline process needs no compiled model
        compiled = compile_warm(work.run.model, lambda module: train(work.run, forward=module), inference=False)
        work.compiled, work.compile_seconds = compiled.module, compiled.compile_seconds
    return Workload(inputs=work, items=ctx.size["steps"] * ctx.size["batch"])


def _eager(work: CompiledRun) -> Trained:
    return Trained(train(work.run))


def _compiled(work: CompiledRun) -> Trained:
    if work.compiled is None:
        raise DeclarationError("training.compile: variant 'compiled' got a workload prepared without a "
                               "compiled model; prepare it with Context(variant='compiled')")
    return Trained(train(work.run, forward=work.compiled), work.compile_seconds)


register(Subject(
    area="training", name="compile", item="sequence",
    description="N AdamW steps of a GPT-2 style protein LM, eager vs torch.compile (compiled once in setup)",
    prepare=_prepare_compile,
    variants=(Variant("baseline", _eager, "eager PyTorch"),
              Variant("compiled", _compiled, "torch.compile(model), inductor; forward and backward compiled",
                      requires=("compile",))),
    equivalence=Equivalence(LOSS_DELTA, 1e-4, loss_delta,
                            "losses within 1e-4: inductor reorders float reductions (~1e-7 here); "
                            "a 2x learning-rate change moves them by ~0.04"),
    sizes=GPT2_SIZES,
    measures=(Measure(COMPILE_SECONDS, lambda work, out: out.compile_seconds),),
    timeout=600.0,
    notes="Setup (of the compiled variant only) compiles and warms the model, so time_call is steady-state "
          "step time; compile_seconds is the first call's time minus a warm call's (inductor cache in the "
          "project's work directory, so a second run on a machine compiles from cache).",
))


# -- causal_mask_cache -------------------------------------------------------------------

@dataclass
class MaskedForwards:
    """Seed 004's causal model, its input batches, and the mask cache kept across calls."""

    model: CausalLM
    batches: list[torch.Tensor]
    cache: CachedMask


def _prepare_mask(ctx: Context) -> Workload:
    s = ctx.size
    torch.manual_seed(0)
    model = CausalLM(VOCAB_SIZE, s["hidden"], s["layers"], s["heads"], s["seq"]).to(ctx.device).train()
    batches = [b["input_ids"].to(ctx.device) for b in causal_lm_batches(s["forwards"], s["batch"], s["seq"])]
    return Workload(inputs=MaskedForwards(model, batches, CachedMask()), items=s["forwards"] * s["batch"])


def _forwards(work: MaskedForwards) -> list[torch.Tensor]:
    return [work.model(ids).detach() for ids in work.batches]


def _mask_every_forward(work: MaskedForwards) -> list[torch.Tensor]:
    work.model.masks = FreshMask()
    return _forwards(work)


def _mask_cached(work: MaskedForwards) -> list[torch.Tensor]:
    work.model.masks = work.cache
    return _forwards(work)


def _logits_diff(base: list[torch.Tensor], other: list[torch.Tensor]) -> float:
    return max(float((a - b).abs().max()) for a, b in zip(base, other, strict=True))


register(Subject(
    area="training", name="causal_mask_cache", item="sequence",
    description="N training-mode forward passes of a GPT-style model: causal mask built every forward vs cached",
    prepare=_prepare_mask,
    variants=(Variant("baseline", _mask_every_forward, "torch.triu mask built in every forward pass"),
              Variant("cached", _mask_cached, "one mask per (length, device, dtype), reused",
                      state=State("the masks built so far, kept across calls: every timed call starts warm",
                                  probe=lambda work: len(work.cache)))),
    equivalence=Equivalence(MAX_ABS_DIFF, 0.0, _logits_diff,
                            "identical logits: the cached mask holds the same values"),
    sizes=(Size.of("tiny", hidden=64, layers=2, heads=2, seq=64, batch=4, forwards=2),
           Size.of("small", hidden=128, layers=2, heads=4, seq=128, batch=8, forwards=8),
           Size.of("large", hidden=384, layers=6, heads=6, seq=256, batch=8, forwards=8)),
))


# -- memory_queries ----------------------------------------------------------------------

@dataclass(frozen=True)
class Logged:
    """Losses of one call and how many memory snapshots it took."""

    losses: torch.Tensor
    queries: int


def _query_every_step(run: TrainingRun) -> Logged:
    log: list[dict[str, float]] = []
    losses = train(run, after_step=lambda: log.append(memory_snapshot(run.device)))
    return Logged(losses, len(log))


def _query_once(run: TrainingRun) -> Logged:
    losses = train(run)
    return Logged(losses, len([memory_snapshot(run.device)]))


register(Subject(
    area="training", name="memory_queries", item="sequence",
    description="an epoch of N AdamW steps of a GPT-2 style LM, memory queried every step vs once per epoch",
    prepare=_prepare_gpt2,
    variants=(Variant("baseline", _query_every_step, "psutil (and torch.cuda on GPU) queried after every step"),
              Variant("once", _query_once, "queried once at the end of the epoch")),
    equivalence=Equivalence(LOSS_DELTA, REPRODUCIBLE, loss_delta,
                            "losses within 1e-4: queries do not touch training (identical on CPU; GPU backward "
                            "kernels with atomic adds are not bitwise reproducible)"),
    sizes=GPT2_SIZES,
    measures=(Measure(Metric("memory_queries", "queries", higher_is_better=False), lambda run, out: out.queries),),
))


# -- grad_accumulation -------------------------------------------------------------------

@dataclass
class AccumulationRun:
    """A training run whose batches are split into `micro_batches` slices by the variant."""

    run: TrainingRun
    micro_batches: int


def _prepare_accumulation(ctx: Context) -> Workload:
    run = _gpt2_run(ctx)
    return Workload(inputs=AccumulationRun(run, ctx.size["micro"]), items=ctx.size["steps"] * ctx.size["batch"])


def _large_batch(work: AccumulationRun) -> Accumulated:
    return accumulate(work.run, 1)


def _micro_batches(work: AccumulationRun) -> Accumulated:
    return accumulate(work.run, work.micro_batches)


register(Subject(
    area="training", name="grad_accumulation", item="sequence",
    description="AdamW steps of a GPT-2 style LM: one large batch per step vs the same batch as N micro-batches",
    prepare=_prepare_accumulation,
    variants=(Variant("baseline", _large_batch, "the whole batch in one forward/backward"),
              Variant("accumulated", _micro_batches, "micro-batches, loss / N, gradients summed, one step")),
    equivalence=Equivalence(MAX_ABS_DIFF, 1e-5, lambda a, b: _max_abs_diff(a.gradient, b.gradient),
                            "last step's gradient within 1e-5 (~4e-8 seen on CPU): the same mean over the same "
                            "tokens, summed in a different order; forgetting to divide by N scales it N times"),
    sizes=(Size.of("tiny", hidden=64, layers=2, heads=2, seq=64, batch=4, micro=2, steps=2),
           Size.of("small", hidden=128, layers=2, heads=4, seq=128, batch=16, micro=4, steps=2),
           Size.of("large", hidden=384, layers=6, heads=6, seq=256, batch=32, micro=4, steps=2)),
    track_memory=True,
))
