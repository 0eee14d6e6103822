"""Seed 000 end to end: FASTA -> LMDB -> tokenization -> one training epoch of a small ESM2AE.

One call converts the FASTA file into a fresh LMDB store, reads the epoch's sequences back,
tokenizes and masks them, batches them, trains the autoencoder (`workloads.esm2ae`) for one
epoch from its starting weights, and evaluates it on a fixed held-out batch. Each optimization
seed 000 lists is a part, done by the code of the subject that measures it alone:

- batched_writes: `put_records`, one commit per 5,000 records (`loading.fasta_to_lmdb`);
- cursor_reads: one read transaction and a cursor in batches of 1,000 (`loading.lmdb_read`);
- fast_tokenizer: the tokenizers-backed ESM tokenizer on 1,000 sequences a call
  (`tokenization.batch_tokenize`);
- dynamic_padding: max_length 512 with the longer sequences filtered out first, batches formed
  from length-sorted sequences and padded to their longest (`tokenization.padding_strategy`);
- workers: DataLoader workers with prefetching (`loading.dataloader`); the examples are made
  inside the call, so the workers start with the epoch (one epoch per call, as one run);
- bf16: autocast to bfloat16 (`training.mixed_precision`);
- checkpointing: activation checkpointing of the backbone (`training.gradient_checkpointing`).

With every part off the pipeline is what the seed starts from: parse the whole file, one commit
per record, a map-style read of one key per transaction, the pure-Python tokenizer one sequence
at a time, every sequence padded (or cut) to 700 tokens, the loader in the training process,
fp32, every activation kept. The batches of the two differ (the filter drops the sequences
over 510 residues, grouping changes which sequences share a batch), so the equivalence is the
held-out loss after the epoch, not the loss of each step.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from proofbench.subjects.workloads.dataloading import make_loader
from proofbench.subjects.workloads.esm2ae import Esm2AE, evaluation_loss
from proofbench.subjects.workloads.fasta import read_fasta
from proofbench.subjects.workloads.lmdb_store import (
    cursor_batches,
    fresh_store,
    put_each,
    put_records,
    read_each,
    store_keys,
)
from proofbench.subjects.workloads.models import masked, mlm_example, pad_collate
from proofbench.subjects.workloads.parts import (
    BATCHED_WRITES,
    BF16,
    CHECKPOINTING,
    CURSOR_READS,
    DYNAMIC_PADDING,
    FAST_TOKENIZER,
    FLASH_ATTENTION,
    PIN_MEMORY,
    TF32,
    WORKERS,
)
from proofbench.subjects.workloads.proteins import generate_proteins
from proofbench.subjects.workloads.tokenizer import esm_fast, esm_slow, fitting, ids_batched, ids_one_by_one
from proofbench.subjects.workloads.trainer import TrainingRun, checkpointing, observed_forward, train

LONG_LENGTH, SHORT_LENGTH = 700, 512  # seed 000: max_length 700 before, 512 after
WRITE_BATCH, READ_BATCH, TOKENIZE_BATCH = 5000, 1000, 1000  # the per-part subjects' batch sizes
HELD_OUT = 8  # proteins after the training ones, never trained on: the equivalence batch

PARTS = (BATCHED_WRITES, CURSOR_READS, FAST_TOKENIZER, DYNAMIC_PADDING, WORKERS, BF16, CHECKPOINTING, PIN_MEMORY,
         TF32, FLASH_ATTENTION)


@dataclass
class AutoencoderWork:
    """The FASTA file, where each call makes its store, the model run and its held-out batch."""

    fasta: Path
    scratch: Path
    run: TrainingRun
    held_out: dict[str, torch.Tensor]
    batch: int
    workers: int
    slow: Any = field(default_factory=esm_slow)
    fast: Any = field(default_factory=esm_fast)


@dataclass(frozen=True)
class AutoencoderEpoch:
    """One call's outcome: losses per step, the held-out loss, sequences trained on, and what ran."""

    losses: torch.Tensor
    evaluation: float
    trained: int
    observed: dict[str, object]


def autoencoder_work(fasta: Path, scratch: Path, size: Any, device: str) -> AutoencoderWork:
    """The workload of one size: the model built from it, the held-out batch after its `n` proteins."""
    model = Esm2AE(size["hidden"], size["layers"], size["heads"], size["bottleneck"], LONG_LENGTH)
    extra = generate_proteins(size["n"] + HELD_OUT)[size["n"]:]
    held_out = pad_collate([mlm_example(p.sequence, size["n"] + i, SHORT_LENGTH) for i, p in enumerate(extra)])
    run = TrainingRun(model, [], device=device)
    return AutoencoderWork(fasta, scratch, run, {k: v.to(device) for k, v in held_out.items()}, size["batch"],
                           size["workers"])


def _sequences(parts: frozenset[str], work: AutoencoderWork) -> list[str]:
    # FASTA -> a fresh store -> the epoch's sequences, in stored order.
    with fresh_store(work.scratch) as env:
        if "batched_writes" in parts:
            put_records(env, read_fasta(work.fasta), WRITE_BATCH)
        else:
            put_each(env, list(read_fasta(work.fasta)))  # the whole file parsed first
        if "cursor_reads" in parts:
            return [seq for batch in cursor_batches(env, READ_BATCH) for _, seq in batch]
        return read_each(env, store_keys(env))


def _examples(parts: frozenset[str], work: AutoencoderWork, sequences: list[str]) -> tuple[list, list[int]]:
    # Tokenize and mask; returns the examples and the order the epoch visits them in.
    short = "dynamic_padding" in parts
    keep = fitting(sequences, SHORT_LENGTH) if short else list(range(len(sequences)))
    texts = [sequences[i] for i in keep]
    options = {"truncation": True, "max_length": SHORT_LENGTH if short else LONG_LENGTH}
    ids = (ids_batched(work.fast, texts, TOKENIZE_BATCH, **options) if "fast_tokenizer" in parts
           else ids_one_by_one(work.slow, texts, **options))
    examples = [masked(x, index) for x, index in zip(ids, keep)]
    order = np.random.default_rng(0).permutation(len(examples)).tolist()  # the sampler's fixed shuffle
    if short:
        order.sort(key=lambda i: len(ids[i]))  # group_by_length
    return examples, order


def run_autoencoder(parts: frozenset[str], work: AutoencoderWork) -> AutoencoderEpoch:
    """One call of the pipeline with `parts` on (see the module docstring)."""
    examples, order = _examples(parts, work, _sequences(parts, work))
    collate = pad_collate if "dynamic_padding" in parts else partial(pad_collate, length=LONG_LENGTH)
    loader = make_loader(examples, order, work.batch, work.workers if "workers" in parts else 0, collate=collate)
    with checkpointing(work.run.model) if "checkpointing" in parts else nullcontext(), \
            observed_forward(work.run.model, work.run.device) as seen:
        losses = train(work.run, batches=iter(loader), autocast=torch.bfloat16 if "bf16" in parts else None)
    seen.update(workers=loader.num_workers, trained=len(examples))
    del loader  # its workers stop here, not at some later collection
    return AutoencoderEpoch(losses, evaluation_loss(work.run.model, work.held_out), len(examples), seen)


def evaluation_delta(base: AutoencoderEpoch, other: AutoencoderEpoch) -> float:
    """How far the variant's held-out loss is from the baseline's."""
    return abs(base.evaluation - other.evaluation)
