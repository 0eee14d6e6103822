"""LMDB stores of protein records: writing them and reading them back (py-lmdb).

Layout, kept deliberately plain: one unnamed database; key = the record id in UTF-8
(b"P000001"), value = the sequence in ASCII. Descriptions are not stored. LMDB keeps keys
sorted, so a cursor walks the records in id order.

py-lmdb allows one open `Environment` per store per process, and a forked process inherits
its parent's handle, which it must not use. So environments are opened inside `with`
blocks, and `StoreReader` opens its store lazily in the process that reads from it: a
DataLoader worker that receives a reader (forked or pickled) opens its own handle on first
use.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Iterable, Iterator

import lmdb

from proofbench.errors import InputError
from proofbench.subjects.workloads.proteins import ProteinRecord

# Sparse on Linux: the file grows with the data, the map only reserves address space.
DEFAULT_MAP_SIZE = 1 << 30
DATA_FILE = "data.mdb"
_EXPECTED = "expected a directory holding an LMDB store (data.mdb), as write_store makes"


def encode(record: ProteinRecord) -> tuple[bytes, bytes]:
    """The (key, value) pair a record is stored as."""
    return record.id.encode("utf-8"), record.sequence.encode("ascii")


def open_environment(path: Path | str, *, readahead: bool = True, max_readers: int = 126) -> lmdb.Environment:
    """Open an existing store read-only; InputError names the path when it is missing or corrupt.

    The caller owns the handle and must close it (see `reading`, `StoreReader`).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such LMDB store; {_EXPECTED}")
    if not (path / DATA_FILE).is_file():
        found = "a file" if path.is_file() else f"a directory without {DATA_FILE}"
        raise InputError(f"{path}: found {found}; {_EXPECTED}")
    try:
        return lmdb.open(str(path), readonly=True, lock=True, readahead=readahead,
                         max_readers=max_readers, subdir=True)
    except (lmdb.InvalidError, lmdb.VersionMismatchError, lmdb.CorruptedError) as exc:
        raise InputError(f"{path}: {DATA_FILE} is not a valid LMDB file ({exc}); {_EXPECTED}") from None
    except lmdb.Error as exc:
        raise InputError(f"{path}: cannot open the LMDB store ({exc}); {_EXPECTED}") from None


@contextmanager
def reading(path: Path | str) -> Iterator[lmdb.Environment]:
    """A read-only environment for the `with` block, closed when it ends."""
    env = open_environment(path)
    try:
        yield env
    finally:
        env.close()


@contextmanager
def creating(path: Path | str, map_size: int = DEFAULT_MAP_SIZE) -> Iterator[lmdb.Environment]:
    """A writable environment for a new store at `path` (which must not exist yet)."""
    path = Path(path)
    if path.exists():
        raise InputError(f"{path}: already exists; expected a new path for the store to create")
    env = lmdb.open(str(path), map_size=map_size, subdir=True)
    try:
        yield env
    finally:
        env.close()


def put_records(env: lmdb.Environment, records: Iterable[ProteinRecord], batch_size: int) -> int:
    """Write `records`, committing one write transaction per `batch_size` records.

    `records` is consumed lazily, so a streaming parser never holds more than one batch.
    Returns the number of records written.
    """
    if batch_size < 1:
        raise InputError(f"put_records: batch_size must be >= 1, got {batch_size}")
    pairs = (encode(record) for record in records)
    count = 0
    while batch := list(islice(pairs, batch_size)):
        with env.begin(write=True) as txn:
            txn.cursor().putmulti(batch)
        count += len(batch)
    return count


def put_each(env: lmdb.Environment, records: Iterable[ProteinRecord]) -> int:
    """Write `records` with one write transaction, and one commit, per record (the naive way)."""
    count = 0
    for record in records:
        with env.begin(write=True) as txn:
            txn.put(*encode(record))
        count += 1
    return count


@contextmanager
def fresh_store(scratch: Path | str) -> Iterator[lmdb.Environment]:
    """A new writable store in a new directory under `scratch`, removed with it when the block ends."""
    where = Path(tempfile.mkdtemp(prefix="store-", dir=scratch))
    try:
        with creating(where / "store") as env:
            yield env
    finally:
        shutil.rmtree(where, ignore_errors=True)


def store_keys(env: lmdb.Environment) -> list[bytes]:
    """Every key of an open store, in stored (sorted) order: a map-style Dataset's index."""
    with env.begin() as txn:
        return list(txn.cursor().iternext(keys=True, values=False))


def read_each(env: lmdb.Environment, keys: Iterable[bytes]) -> list[str]:
    """The sequences under `keys`, each read in its own read transaction (a map-style Dataset's way)."""
    sequences = []
    for key in keys:
        with env.begin() as txn:
            sequences.append(txn.get(key).decode("ascii"))
    return sequences


def cursor_batches(env: lmdb.Environment, batch_size: int = 1000) -> Iterator[list[tuple[bytes, str]]]:
    """Every (key, sequence) pair in stored order, in lists of `batch_size`, from one read
    transaction and one cursor."""
    with env.begin() as txn:
        pairs = txn.cursor().iternext(keys=True, values=True)
        while batch := list(islice(pairs, batch_size)):
            yield [(key, value.decode("ascii")) for key, value in batch]


def write_store(path: Path | str, records: Iterable[ProteinRecord], batch_size: int = 5000,
                map_size: int = DEFAULT_MAP_SIZE) -> int:
    """Create a store at `path` holding `records`, atomically (built aside, then renamed).

    A crash leaves no half-written store at `path`. Returns the number of records.
    """
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    with creating(partial, map_size) as env:
        count = put_records(env, records, batch_size)
    os.replace(partial, path)
    return count


def store_items(env: lmdb.Environment) -> list[tuple[bytes, bytes]]:
    """Every (key, value) pair of an open store, in key order, read in one transaction."""
    with env.begin() as txn:
        return list(txn.cursor().iternext(keys=True, values=True))


class StoreReader:
    """A read-only view of one store that is safe to hand to DataLoader workers.

    Nothing is opened until the first read, and then in the process that reads: a reader
    pickled to a spawned worker arrives closed, and a forked worker that inherits an open
    handle drops it and opens its own. Use it as a context manager, or call `close()`.
    `readahead` and `max_readers` are passed to `lmdb.open`.
    """

    def __init__(self, path: Path | str, *, readahead: bool = True, max_readers: int = 128) -> None:
        self.path = Path(path)
        self.readahead = readahead
        self.max_readers = max_readers
        self._env: lmdb.Environment | None = None
        self._pid = 0

    def environment(self) -> lmdb.Environment:
        """The open environment for this process, opened on first use."""
        if self._env is not None and self._pid != os.getpid():
            self._env.close()  # inherited through fork: LMDB only releases this process's slots
            self._env = None
        if self._env is None:
            self._env = open_environment(self.path, readahead=self.readahead, max_readers=self.max_readers)
            self._pid = os.getpid()
        return self._env

    @property
    def is_open(self) -> bool:
        """True when this process holds an open handle (an inherited one does not count)."""
        return self._env is not None and self._pid == os.getpid()

    def close(self) -> None:
        """Close the handle (if open); the next read opens it again."""
        if self._env is not None:
            self._env.close()
            self._env = None

    def __enter__(self) -> "StoreReader":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __getstate__(self) -> dict:
        return {"path": self.path, "readahead": self.readahead, "max_readers": self.max_readers}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], readahead=state["readahead"], max_readers=state["max_readers"])

    def __len__(self) -> int:
        return int(self.environment().stat()["entries"])

    def keys(self) -> list[bytes]:
        """Every key, in stored (sorted) order."""
        return store_keys(self.environment())

    def get(self, key: bytes) -> str:
        """The sequence stored under `key`, in its own read transaction; KeyError if absent."""
        with self.environment().begin() as txn:
            value = txn.get(key)
        if value is None:
            raise KeyError(f"{self.path}: no record {key!r}")
        return value.decode("ascii")

    def batches(self, batch_size: int = 1000) -> Iterator[list[tuple[bytes, str]]]:
        """Every (key, sequence) pair in stored order, in lists of `batch_size` (`cursor_batches`)."""
        yield from cursor_batches(self.environment(), batch_size)
