"""Loading subjects: reading protein sequences from LMDB, and converting FASTA into LMDB.

Both work on real files made from the synthetic proteins of `subjects.proteins`, built once
per run by `build_cache` (one file per size in the cache directory):

- `loading.lmdb_read` reads one training epoch from an LMDB store. The epoch visits every
  record in stored (key) order, which is what the seed's loader does ("for key, value in
  cursor"); a map-style Dataset holds that order as its index list of keys. A shuffled
  epoch would be a random-access workload, where a cursor walk does not apply, so it is
  not this subject. The store is opened once in `prepare`, with the seed's settings
  (readahead on, 128 readers) for both variants: py-lmdb allows one handle per store per
  process, and readahead is py-lmdb's default anyway.
- `loading.fasta_to_lmdb` converts a FASTA file into a new store. Every call creates a fresh
  directory in the cache directory's `scratch/` (same file system as the fixtures), writes,
  reads the store back and removes it, so calls are repeatable. Both variants open the
  store with py-lmdb's defaults (durable commits: each commit syncs to disk).

Outputs are compared record by record; an optimization may not change a single record.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import lmdb

from proofbench import Context, Equivalence, Metric, Size, Subject, Variant, Workload, register
from proofbench.errors import InputError
from proofbench.subjects.workloads.fasta import read_fasta
from proofbench.subjects.workloads.lmdb_store import (
    StoreReader,
    fresh_store,
    put_each,
    put_records,
    read_each,
    store_items,
)
from proofbench.subjects.workloads.protein_files import build_fasta_files, build_protein_stores, fasta_path, store_path

READ_BATCH = 1000  # the seed's prefetch_batch_generator(batch_size=1000)
WRITE_BATCH = 5000  # records per write transaction when converting

DIFFERING_RECORDS = Metric("differing_records", "records", higher_is_better=False)


def differing_records(expected: list, got: list) -> float:
    """How many records differ between two outputs in the same order (missing ones count)."""
    return float(sum(a != b for a, b in zip(expected, got)) + abs(len(expected) - len(got)))


# -- loading.lmdb_read ---------------------------------------------------------------

@dataclass(frozen=True)
class Epoch:
    """One epoch to read: the store and its keys in the order the epoch visits them."""

    reader: StoreReader
    keys: tuple[bytes, ...]


# One reader per store per process: py-lmdb refuses a second handle on the same store,
# and `prepare` may run more than once in a process (tests, quality checks).
_READERS: dict[Path, StoreReader] = {}


def _prepare_read(ctx: Context) -> Workload:
    path = store_path(ctx.cache_dir, ctx.size["n"]).resolve()
    reader = _READERS.get(path)
    if reader is None:
        reader = _READERS[path] = StoreReader(path, readahead=True, max_readers=128)
    keys = tuple(reader.keys())  # opens the store now, outside the timed calls
    return Workload(inputs=Epoch(reader, keys), items=len(keys))


def _read_per_key(epoch: Epoch) -> list[str]:
    # A map-style Dataset's __getitem__: a fresh read transaction for every key.
    return read_each(epoch.reader.environment(), epoch.keys)


def _read_batched(epoch: Epoch) -> list[str]:
    # One read transaction and one cursor, consumed in batches of READ_BATCH records. The
    # cursor walks the whole store, which is the epoch: prepare took the keys from it.
    return [seq for batch in epoch.reader.batches(READ_BATCH) for _, seq in batch]


def _epoch_bytes(epoch: Epoch, sequences: list[str]) -> float:
    # Keys and values read from the store (sequences are ASCII: one byte per residue).
    return float(sum(map(len, epoch.keys)) + sum(map(len, sequences)))


register(Subject(
    area="loading", name="lmdb_read", item="sequence",
    description="one epoch of protein sequences read from LMDB: a transaction per key vs one cursor in batches",
    prepare=_prepare_read,
    variants=(
        Variant("baseline", _read_per_key, "new read txn + txn.get(key) per key; env opened once"),
        Variant("optimized", _read_batched, f"one read txn, cursor walk in batches of {READ_BATCH}"),
    ),
    equivalence=Equivalence(DIFFERING_RECORDS, 0.0, differing_records,
                            description="same sequences in the same order: reading must not change data"),
    sizes=(Size.of("tiny", n=100), Size.of("small", n=100_000), Size.of("large", n=500_000)),
    build_cache=build_protein_stores,
    track_memory=False,
    workload_version=1,
    bound="data", bytes_moved=_epoch_bytes,
    notes="The seed's own 'before' already walks a cursor; the per-key transaction is the "
          "map-style Dataset way, the naive start the catalogue names.",
))


# -- loading.fasta_to_lmdb -----------------------------------------------------------

@dataclass(frozen=True)
class Conversion:
    """A FASTA file to convert, and the directory in which each call makes its store."""

    fasta: Path
    scratch: Path


def _prepare_convert(ctx: Context) -> Workload:
    fasta = fasta_path(ctx.cache_dir, ctx.size["n"])
    if not fasta.is_file():
        raise InputError(f"{fasta}: FASTA fixture not found; expected build_cache to have written it")
    scratch = Path(ctx.cache_dir) / "scratch"
    scratch.mkdir(exist_ok=True)
    return Workload(inputs=Conversion(fasta, scratch), items=ctx.size["n"])


def _convert(job: Conversion, fill: Callable[[lmdb.Environment], object]) -> list[tuple[bytes, bytes]]:
    # Make a fresh store, let `fill` write it, read it back whole; the store is removed after.
    with fresh_store(job.scratch) as env:
        fill(env)
        return store_items(env)


def _convert_per_record(job: Conversion) -> list[tuple[bytes, bytes]]:
    # Parse the whole file first, then one write transaction + commit per record.
    return _convert(job, lambda env: put_each(env, list(read_fasta(job.fasta))))


def _convert_batched(job: Conversion) -> list[tuple[bytes, bytes]]:
    return _convert(job, lambda env: put_records(env, read_fasta(job.fasta), WRITE_BATCH))


def _conversion_bytes(job: Conversion, items: list[tuple[bytes, bytes]]) -> float:
    # The FASTA file parsed, plus the records written to the store and read back.
    return float(job.fasta.stat().st_size + 2 * sum(len(k) + len(v) for k, v in items))


register(Subject(
    area="loading", name="fasta_to_lmdb", item="sequence",
    description="FASTA of proteins converted into a new LMDB store: a commit per record vs streamed batched commits",
    prepare=_prepare_convert,
    variants=(
        Variant("baseline", _convert_per_record, "parse the whole file, then one write txn + commit per record"),
        Variant("optimized", _convert_batched, f"streamed parse, one write txn per {WRITE_BATCH} records"),
    ),
    equivalence=Equivalence(DIFFERING_RECORDS, 0.0, differing_records,
                            description="the stores hold the same key/value pairs: conversion must be lossless"),
    sizes=(Size.of("tiny", n=100), Size.of("small", n=500), Size.of("large", n=10_000)),
    build_cache=build_fasta_files,
    track_memory=False,
    workload_version=1,
    bound="data", bytes_moved=_conversion_bytes,
    timeout=600.0,  # large baseline: one synced commit per record, seconds per call on a slow disk
    notes="Both variants keep py-lmdb's durable defaults, so the baseline pays one disk sync per "
          "record; the parse itself costs the same in both.",
))
