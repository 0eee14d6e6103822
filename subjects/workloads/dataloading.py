"""Feeding a training loop from an LMDB store: the workload of the `loading.dataloader` subject.

`loading.dataloader` trains an ESM-2 style masked LM for one epoch over proteins read from
a real LMDB store (built by `build_cache`), one record per `__getitem__`: read, tokenize,
mask. The baseline loads in the training process (`num_workers=0`); the optimized loader
uses worker processes with `persistent_workers` and `prefetch_factor`, as seeds 000, 002,
003 and 004 configure it; on a GPU, "pinned" adds `pin_memory` and `non_blocking` copies.

Choices, so the timed call is one epoch and nothing else:
- The measured variant's worker loader is created in `prepare` (`Context.variant`) and runs
  one epoch there, so its workers are started (and have opened the store) before anything
  is timed; being persistent, they serve every later epoch. Worker start-up is therefore
  not part of `time_call`.
- py-lmdb allows one handle per store per process and a forked worker must not use its
  parent's handle. Workers are forked (in `prepare`) before the training process opens
  the store, and each worker opens its own handle in `worker_init_fn`; the baseline opens
  the training process's handle on its first read. The process keeps one reader per store
  and closes it before forking, so an earlier workload's open handle is never inherited.
- The epoch visits the records in one fixed shuffled order (a list sampler), so every
  call, in any variant, trains on the same batches and gives the same losses.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from proofbench.declare import Context, Size, Workload
from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.lmdb_store import StoreReader
from proofbench.subjects.workloads.models import esm_mlm, mlm_example, pad_collate
from proofbench.subjects.workloads.protein_files import store_path
from proofbench.subjects.workloads.proteins import record_id
from proofbench.subjects.workloads.trainer import TrainingRun, train

PREFETCH_FACTOR = 4  # seed 000: dataloader_prefetch_factor: 4


class ProteinStore(Dataset):
    """Masked-LM examples read one by one from an LMDB store of proteins."""

    def __init__(self, reader: StoreReader, count: int, seq: int) -> None:
        self.reader = reader
        self.keys = [record_id(i).encode("utf-8") for i in range(1, count + 1)]  # write_store's keys
        self.seq = seq

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return mlm_example(self.reader.get(self.keys[index]), index, self.seq)


def _open_in_worker(worker_id: int) -> None:
    # Each worker opens its own LMDB handle before its first read.
    get_worker_info().dataset.reader.environment()


@dataclass
class LoaderRun:
    """A training run and the loaders that feed it: `inline` always, `workers` or `pinned`
    when prepared for that variant (their workers already started)."""

    run: TrainingRun
    inline: DataLoader
    workers: DataLoader | None
    pinned: DataLoader | None


def make_loader(dataset: Dataset, order: list[int], batch: int, workers: int, *, pin: bool = False,
                collate: Callable[[list], object] = pad_collate,
                worker_init: Callable[[int], None] | None = None) -> DataLoader:
    """A DataLoader visiting `dataset` in `order`: in this process (`workers` 0), or with that many
    persistent workers prefetching `PREFETCH_FACTOR` batches each, as the seeds configure it."""
    extra = {"persistent_workers": True, "prefetch_factor": PREFETCH_FACTOR,
             "worker_init_fn": worker_init} if workers else {}
    return DataLoader(dataset, batch_size=batch, sampler=order, collate_fn=collate,
                      num_workers=workers, pin_memory=pin, **extra)


def started(loader: DataLoader) -> DataLoader:
    """`loader` after one epoch: its persistent workers are forked and warm before anything is timed."""
    for _ in loader:
        pass
    return loader


def _loader(dataset: ProteinStore, order: list[int], size: Size, workers: int, pin: bool = False) -> DataLoader:
    return make_loader(dataset, order, size["batch"], workers, pin=pin, worker_init=_open_in_worker)


# One reader per store per process: py-lmdb refuses a second handle on a store in a process,
# and workers must be forked while this process holds none (see `_prepare`).
_READERS: dict[Path, StoreReader] = {}


def _reader(path: Path) -> StoreReader:
    return _READERS.setdefault(path, StoreReader(path))


def prepare_loader(ctx: Context) -> Workload:
    s = ctx.size
    reader = _reader(store_path(ctx.cache_dir, s["n"]).resolve())
    if ctx.variant != "baseline":
        reader.close()  # workers forked below must not inherit an open handle; reads reopen it
    dataset = ProteinStore(reader, s["n"], s["seq"])
    order = np.random.default_rng(0).permutation(s["n"]).tolist()
    # Only the measured variant's worker loader is started; the baseline's needs no start.
    workers = _loader(dataset, order, s, s["workers"]) if ctx.variant == "workers" else None
    pinned = _loader(dataset, order, s, s["workers"], pin=True) if ctx.variant == "pinned" else None
    for loader in (workers, pinned):
        if loader is not None:
            started(loader)  # fork the persistent workers and run one epoch before timing
    run = TrainingRun(esm_mlm(s["hidden"], s["layers"], s["heads"], s["seq"]), [], device=ctx.device)
    return Workload(inputs=LoaderRun(run, _loader(dataset, order, s, 0), workers, pinned), items=s["n"])


def _epoch(run: TrainingRun, loader: DataLoader, non_blocking: bool = False) -> torch.Tensor:
    return train(run, batches=loader, non_blocking=non_blocking)


def inline_epoch(work: LoaderRun) -> torch.Tensor:
    return _epoch(work.run, work.inline)


def _prepared(loader: DataLoader | None, variant: str) -> DataLoader:
    if loader is None:
        raise DeclarationError(f"loading.dataloader: variant {variant!r} got a workload prepared without its "
                               f"loader; prepare it with Context(variant={variant!r})")
    return loader


def worker_epoch(work: LoaderRun) -> torch.Tensor:
    return _epoch(work.run, _prepared(work.workers, "workers"))


def pinned_epoch(work: LoaderRun) -> torch.Tensor:
    return _epoch(work.run, _prepared(work.pinned, "pinned"), non_blocking=True)
