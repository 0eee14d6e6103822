"""The data loader subject (area "loading"): feeding a training loop from an LMDB store.

Declared apart from `subjects/loading.py` because it trains a model: importing it imports torch,
which the other loading subjects do not need. How the loader is made, and why the timed call is
one epoch and nothing else, is in `workloads/dataloading.py`.
"""
from __future__ import annotations

from proofbench import Equivalence, Size, Subject, Variant, register
from proofbench.subjects.workloads.dataloading import (
    PREFETCH_FACTOR,
    inline_epoch,
    pinned_epoch,
    prepare_loader,
    worker_epoch,
)
from proofbench.subjects.workloads.protein_files import build_protein_stores
from proofbench.subjects.workloads.trainer import LOSS_DELTA, loss_delta

register(Subject(
    area="loading", name="dataloader", item="sequence",
    description="one epoch of ESM-2 style MLM training fed from LMDB: num_workers=0 vs persistent prefetching workers",
    prepare=prepare_loader,
    variants=(Variant("baseline", inline_epoch,
                      "DataLoader(num_workers=0): read, tokenize, mask in the training process"),
              Variant("workers", worker_epoch,
                      f"num_workers=N, persistent_workers=True, prefetch_factor={PREFETCH_FACTOR}"),
              Variant("pinned", pinned_epoch, "workers + pin_memory=True + .to(device, non_blocking=True)",
                      requires=("cuda",))),
    equivalence=Equivalence(LOSS_DELTA, 1e-4, loss_delta,
                            "losses within 1e-4: the same batches in the same order, whoever loads them (identical "
                            "on CPU; GPU backward kernels with atomic adds are not bitwise reproducible)"),
    sizes=(Size.of("tiny", n=16, batch=4, workers=2, hidden=64, layers=2, heads=2, seq=64),
           Size.of("small", n=48, batch=8, workers=2, hidden=64, layers=2, heads=2, seq=256),
           Size.of("large", n=2048, batch=16, workers=4, hidden=384, layers=6, heads=6, seq=512)),
    build_cache=build_protein_stores,
    # An epoch's time is the model's training steps; the loader's gain is hiding reads behind
    # them, so the epoch is set against the arithmetic peak, not the memory bandwidth.
    bound="compute",
    track_memory=True,
    notes="Workers are started in setup (persistent), so the timed epoch excludes worker start-up. Peak "
          "memory is the training process's alone: worker processes are not counted.",
))
