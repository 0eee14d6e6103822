"""Whole pipelines: each seed system end to end, all its optimizations at once, against its headline claims.

One subject per seed system. Its baseline is the naive system the document starts from; its
`optimized` variant turns on every optimization the document lists that runs on any device (the
GPU-only ones are declared as parts left out, with the reason); its `only_<part>` and
`without_<part>` variants are the ablation, measured in the same run (`workloads.composition`).
Every part is done by the code of the subject that measures it alone (`workloads.parts` names
it), so the report can set the whole's speedup beside the product of the parts' speedups.

- `esm2ae_training` (seed 000): FASTA -> LMDB -> tokenization -> one epoch of a small ESM2AE.
- `cafa_embeddings` (seed 001): protein embeddings from an ESM-2 encoder; `esm2_650m_embeddings`
  is the same pipeline at ESM-2 650M's shape (random weights), for the seed's CPU figure: it has
  its own profile (`esm650m`) and no other profile runs it.
- `email_training` (002), `openllm_training` (003), `agi2_training` (004): the training loop.
- `openllm_serving` (003): the inference path, concurrent requests served by one worker.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from proofbench import Context, Equivalence, Measure, Metric, Size, Subject, Workload, register
from proofbench.subjects.inference import TOKENS
from proofbench.subjects.workloads.composition import parts_of, pipeline_variants
from proofbench.subjects.workloads.embedding_pipeline import PARTS as EMBEDDING_PARTS
from proofbench.subjects.workloads.embedding_pipeline import embedding_work, run_embeddings
from proofbench.subjects.workloads.esm2ae_pipeline import PARTS as AUTOENCODER_PARTS
from proofbench.subjects.workloads.esm2ae_pipeline import autoencoder_work, evaluation_delta, run_autoencoder
from proofbench.subjects.workloads.esm_encoder import ProteinEncoder
from proofbench.subjects.workloads.parts import (
    BF16,
    CHECKPOINTING,
    COMPILE,
    FP16_SCALER,
    FUSED_OPTIMIZER,
    GRAD_ACCUMULATION,
    MASK_CACHE,
    MEMORY_QUERIES,
    PIN_MEMORY,
    SDPA,
    WORKERS,
)
from proofbench.subjects.workloads.protein_files import build_fasta_files, fasta_path
from proofbench.subjects.workloads.proteins import generate_proteins
from proofbench.subjects.workloads.quality import HALF_PRECISION_COSINE, MIN_COSINE, SLIGHT_IMPACT_COSINE, min_cosine
from proofbench.subjects.workloads.serving_pipeline import PARTS as SERVING_PARTS
from proofbench.subjects.workloads.serving_pipeline import run_serving, serving_work
from proofbench.subjects.workloads.trainer import LOSS_DELTA, MIXED_PRECISION_TOLERANCE, loss_delta
from proofbench.subjects.workloads.training_pipeline import agi2_model, gpt2_model, loop_work, run_loop

AREA = "pipelines"
SETUP_TIMEOUT = 900.0  # seconds: a compiled variant compiles a whole training step in setup

# -- 000: ESM2AE, FASTA to a trained epoch ----------------------------------------------

HELD_OUT_LOSS = Metric("held_out_loss_delta", "loss", higher_is_better=False)
AUTOENCODER_VARIANTS = pipeline_variants(AUTOENCODER_PARTS, run_autoencoder)


def _prepare_autoencoder(ctx: Context) -> Workload:
    scratch = Path(ctx.cache_dir) / "scratch"
    scratch.mkdir(exist_ok=True)
    work = autoencoder_work(fasta_path(ctx.cache_dir, ctx.size["n"]), scratch, ctx.size, ctx.device)
    return Workload(work, items=ctx.size["n"])


register(Subject(
    area=AREA, name="esm2ae_training", item="sequence",
    description="seed 000 end to end: FASTA -> LMDB -> tokenization -> one training epoch of a small ESM2AE",
    prepare=_prepare_autoencoder, variants=AUTOENCODER_VARIANTS, parts=AUTOENCODER_PARTS,
    equivalence=Equivalence(
        HELD_OUT_LOSS, 0.01, evaluation_delta,
        "held-out loss after the epoch within 0.01 of the baseline's: the epoch lowers it by ~0.085 (size small); "
        "the 512 filter and the length grouping change the batches and move it by ~0.002, bf16 by ~3e-4; a run "
        "that did not learn would stay ~0.085 away"),
    sizes=(Size.of("tiny", n=8, batch=4, workers=2, hidden=32, layers=1, heads=2, bottleneck=8),
           Size.of("small", n=24, batch=4, workers=2, hidden=64, layers=2, heads=4, bottleneck=16),
           Size.of("large", n=256, batch=8, workers=4, hidden=320, layers=6, heads=20, bottleneck=64)),
    build_cache=build_fasta_files, track_memory=True, timeout=SETUP_TIMEOUT,
    measures=(Measure(Metric("trained_sequences", "sequences", higher_is_better=True),
                      lambda work, out: float(out.trained)),),
    notes="Items are the FASTA's sequences; with dynamic_padding on, the ones over 510 residues are filtered out "
          "before training (trained_sequences). Left out, with no subject of their own: batch size 8 -> 16 (it "
          "changes the optimization: half the steps), DeepSpeed ZeRO-2 and Ray (several devices), feature caching "
          "(an inference path).",
))


# -- 001: CAFA-6 protein embeddings ------------------------------------------------------

EMBEDDING_VARIANTS = pipeline_variants(EMBEDDING_PARTS, run_embeddings)
LARGE_MODEL_VARIANTS = tuple(v for v in EMBEDDING_VARIANTS if v.name in ("baseline", "optimized", "without_compile"))
ESM2_650M = dict(hidden=1280, layers=33, heads=20)  # ESM-2 650M (esm2_t33_650M_UR50D), intermediate 4 x hidden


def _embeddings_preparer(variants):
    def prepare(ctx: Context) -> Workload:
        s = ctx.size
        encoder = ProteinEncoder.build(ctx.device, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                       num_attention_heads=s["heads"], intermediate_size=4 * s["hidden"])
        sequences = tuple(r.sequence for r in generate_proteins(s["n"]))
        return Workload(embedding_work(encoder, sequences, s["batch"], parts_of(variants, ctx.variant)),
                        items=len(sequences))
    return prepare


_EMBEDDING_EQUIVALENCE = Equivalence(
    MIN_COSINE, HALF_PRECISION_COSINE, lambda a, b: min_cosine(a.embeddings.values, b.embeddings.values),
    "lowest per-protein cosine similarity to the baseline's embedding >= 0.999: bf16 weights keep ~3 digits "
    "(~0.99997 seen); an embedding turned by more than 2.6 degrees is a changed answer")
_EMBEDDING_TOKENS = (Measure(TOKENS, lambda work, out: float(out.embeddings.real_tokens), rate=True),)

register(Subject(
    area=AREA, name="cafa_embeddings", item="protein",
    description="seed 001 end to end: ESM-2 style protein embeddings, batch after batch, mean-pooled",
    prepare=_embeddings_preparer(EMBEDDING_VARIANTS), variants=EMBEDDING_VARIANTS, parts=EMBEDDING_PARTS,
    equivalence=_EMBEDDING_EQUIVALENCE, measures=_EMBEDDING_TOKENS, timeout=SETUP_TIMEOUT,
    sizes=(Size.of("tiny", n=4, batch=2, hidden=32, layers=1, heads=2),
           Size.of("small", n=24, batch=4, hidden=128, layers=4, heads=4),
           Size.of("large", n=256, batch=16, hidden=320, layers=6, heads=20)),
    notes="Random weights, built from a config. Left out with no subject of its own: cudnn.benchmark (ESM has "
          "no convolution). Compiling happens in setup, on every batch shape.",
))

register(Subject(
    area=AREA, name="esm2_650m_embeddings", item="protein",
    description="seed 001's pipeline at ESM-2 650M's shape (random weights): its CPU proteins/s figure",
    prepare=_embeddings_preparer(LARGE_MODEL_VARIANTS), variants=LARGE_MODEL_VARIANTS, parts=EMBEDDING_PARTS,
    equivalence=_EMBEDDING_EQUIVALENCE, measures=_EMBEDDING_TOKENS, timeout=3600.0,
    sizes=(Size.of("tiny", n=2, batch=2, **ESM2_650M), Size.of("small", n=8, batch=4, **ESM2_650M),
           Size.of("large", n=64, batch=8, **ESM2_650M)),
    notes="Only the esm650m profile runs it: a protein costs seconds on a CPU. The proteins are the catalogue's "
          "synthetic ones (lengths lognormal, mean ~350 residues, 30 to 1000).",
))


# -- 002, 003, 004: the training loop ----------------------------------------------------

_LOOP_EQUIVALENCE = Equivalence(
    LOSS_DELTA, MIXED_PRECISION_TOLERANCE, loss_delta,
    "per-step loss within 0.02 of the baseline's: the same batches from the same weights; bf16 moves it by "
    "~1e-4 here, the other parts by less than 1e-5 (micro-batches of packed rows give the same mean)")
_LOOP_SIZES = (Size.of("tiny", hidden=32, layers=1, heads=2, seq=32, batch=8, steps=2, micro=4, workers=2),
               Size.of("small", hidden=128, layers=2, heads=4, seq=128, batch=8, steps=4, micro=4, workers=2),
               Size.of("large", hidden=384, layers=6, heads=6, seq=256, batch=16, steps=4, micro=4, workers=4))


def _loop_subject(name: str, description: str, parts: tuple, model, *, logs_memory: bool = False,
                  wholes: dict | None = None, notes: str = "") -> Subject:
    variants = pipeline_variants(parts, run_loop, wholes=wholes)

    def prepare(ctx: Context) -> Workload:
        work = loop_work(model(ctx.size), ctx.size, ctx.device, parts_of(variants, ctx.variant),
                         logs_memory=logs_memory)
        return Workload(work, items=ctx.size["steps"] * ctx.size["batch"])

    return Subject(area=AREA, name=name, item="sequence", description=description, prepare=prepare,
                   variants=variants, parts=parts, equivalence=_LOOP_EQUIVALENCE, sizes=_LOOP_SIZES,
                   track_memory=True, timeout=SETUP_TIMEOUT, notes=notes)


register(_loop_subject(
    "email_training", "seed 002 end to end: a training epoch of a GPT-2 style LM with its high-performance "
    "configuration", (BF16, COMPILE, FUSED_OPTIMIZER, GRAD_ACCUMULATION, WORKERS,
                      replace(CHECKPOINTING, left_out="off in the seed's maximum-performance configuration; on in "
                              "its memory-constrained one (memory_optimized)"), FP16_SCALER, PIN_MEMORY, SDPA),
    gpt2_model, wholes={"memory_optimized": ("bf16", "checkpointing", "grad_accumulation")},
    notes="optimized is the seed's 'Maximum performance configuration'; memory_optimized its 'Memory-optimized "
          "configuration' (with 4 micro-batches, not its 8). Left out with no subject of their own: cuDNN "
          "benchmark mode, dynamic batch sizes and adaptive learning rates (they change the training itself)."))
register(_loop_subject(
    "openllm_training", "seed 003 end to end: a training epoch of a GPT-2 style LM with checkpointing, mixed "
    "precision and optimized data loading", (CHECKPOINTING, BF16, WORKERS, FP16_SCALER, PIN_MEMORY), gpt2_model,
    notes="Left out with no subject of its own: dynamic batch sampling (it changes the batches)."))
register(_loop_subject(
    "agi2_training", "seed 004 end to end: a training epoch of its causal LM with the mask cache, AMP, workers "
    "and fewer memory queries", (MASK_CACHE, BF16, WORKERS, MEMORY_QUERIES, FP16_SCALER, PIN_MEMORY), agi2_model,
    logs_memory=True, notes="The naive loop queries memory after every step, as seed 004's did."))


# -- 003: the inference path -------------------------------------------------------------

SERVING_VARIANTS = pipeline_variants(SERVING_PARTS, run_serving)


def _prepare_serving(ctx: Context) -> Workload:
    work = serving_work(ctx.size, parts_of(SERVING_VARIANTS, ctx.variant))
    return Workload(work, items=sum(len(c) for c in work.clients))


register(Subject(
    area=AREA, name="openllm_serving", item="request",
    description="seed 003's inference path end to end: concurrent embedding requests, half of them repeats",
    prepare=_prepare_serving, variants=SERVING_VARIANTS, parts=SERVING_PARTS,
    equivalence=Equivalence(
        MIN_COSINE, SLIGHT_IMPACT_COSINE, lambda a, b: min_cosine(a.responses, b.responses),
        "every response within cosine 0.99 of the plain server's: the seed promises int8 a 'slight impact'; "
        "cache hits and batching alone change nothing beyond float rounding"),
    sizes=(Size.of("tiny", clients=2, per_client=2, repeat_rate=0.5, max_batch=4, max_wait=0.002, capacity=1000),
           Size.of("small", clients=8, per_client=2, repeat_rate=0.5, max_batch=8, max_wait=0.002, capacity=1000),
           Size.of("large", clients=16, per_client=16, repeat_rate=0.5, max_batch=16, max_wait=0.005,
                   capacity=1000)),
    measures=(Measure(Metric("model_bytes", "bytes", higher_is_better=False),
                      lambda work, out: float(out.model_bytes)),),
    timeout=SETUP_TIMEOUT,
    notes="Runs on the CPU in every profile (the int8 kernels are CPU kernels). model_bytes is the serving "
          "model's saved size: the memory the seed's 'Memory Usage' line can mean for inference.",
))
