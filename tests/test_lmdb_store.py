"""LMDB stores: writing, reading in order and in batches, bad stores, and use across processes."""
from __future__ import annotations

import os
import pickle

import pytest

from proofbench.errors import InputError
from proofbench.subjects.workloads.lmdb_store import (
    StoreReader,
    creating,
    open_environment,
    put_records,
    reading,
    store_items,
    write_store,
)
from proofbench.subjects.workloads.proteins import generate_proteins


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "proteins.lmdb"
    write_store(path, generate_proteins(25), batch_size=10)
    return path


def test_store_holds_ids_and_sequences_in_key_order(store):
    records = generate_proteins(25)
    with reading(store) as env:
        items = store_items(env)
    assert items == [(r.id.encode(), r.sequence.encode()) for r in records]


def test_reader_len_keys_get_and_batches(store):
    records = generate_proteins(25)
    with StoreReader(store) as reader:
        assert len(reader) == 25
        assert reader.keys() == [r.id.encode() for r in records]
        assert reader.get(b"P000007") == records[6].sequence
        batches = list(reader.batches(10))
        with pytest.raises(KeyError, match="P999999"):
            reader.get(b"P999999")
    assert [len(b) for b in batches] == [10, 10, 5]
    assert [seq for batch in batches for _, seq in batch] == [r.sequence for r in records]


def test_write_store_leaves_no_partial_directory(store):
    assert sorted(p.name for p in store.parent.iterdir()) == ["proteins.lmdb"]


def test_put_records_commits_in_batches_and_rejects_bad_batch_size(tmp_path):
    with creating(tmp_path / "s") as env:
        assert put_records(env, iter(generate_proteins(7)), batch_size=3) == 7
        assert env.stat()["entries"] == 7
        with pytest.raises(InputError, match="batch_size must be >= 1"):
            put_records(env, generate_proteins(1), batch_size=0)


def test_creating_refuses_an_existing_path(store):
    with pytest.raises(InputError, match="already exists"):
        with creating(store):
            pass


def test_missing_store_names_path_and_expectation(tmp_path):
    with pytest.raises(InputError) as caught:
        open_environment(tmp_path / "absent.lmdb")
    assert str(caught.value).startswith(f"{tmp_path / 'absent.lmdb'}: no such LMDB store")
    assert "expected a directory holding an LMDB store" in str(caught.value)


def test_file_or_empty_directory_is_not_a_store(tmp_path):
    (tmp_path / "plain.txt").write_text("hello")
    with pytest.raises(InputError, match="plain.txt: found a file; expected"):
        open_environment(tmp_path / "plain.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="empty: found a directory without data.mdb"):
        StoreReader(tmp_path / "empty").keys()


def test_corrupt_store_is_an_input_error(tmp_path):
    bad = tmp_path / "corrupt.lmdb"
    bad.mkdir()
    (bad / "data.mdb").write_bytes(b"this is not an lmdb file " * 800)
    with pytest.raises(InputError) as caught:
        open_environment(bad)
    message = str(caught.value)
    assert message.startswith(f"{bad}: data.mdb is not a valid LMDB file")
    assert "MDB_INVALID" in message and "\n" not in message


def test_reader_opens_lazily_and_reopens_after_close(store):
    reader = StoreReader(store)
    assert not reader.is_open  # nothing open until the first read
    assert len(reader) == 25 and reader.is_open
    reader.close()
    assert not reader.is_open
    assert len(reader) == 25  # opens again
    reader.close()


def test_pickled_reader_arrives_closed(store):
    with StoreReader(store, max_readers=64) as reader:
        reader.keys()
        copy = pickle.loads(pickle.dumps(reader))
    assert not copy.is_open and copy.max_readers == 64
    with copy:
        assert len(copy) == 25


def test_second_handle_in_one_process_is_refused_by_lmdb(store):
    # Why StoreReader and the subjects keep one handle per store per process.
    with reading(store):
        with pytest.raises(InputError, match="already open"):
            open_environment(store)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_forked_child_reopens_instead_of_using_the_inherited_handle(store):
    reader = StoreReader(store)
    expected = reader.get(b"P000003")  # the parent has the store open
    pid = os.fork()
    if pid == 0:  # child: exit status 0 only if the read worked and matched
        try:
            ok = not reader.is_open and reader.get(b"P000003") == expected and reader.is_open
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert reader.get(b"P000003") == expected  # the parent's handle still works
    reader.close()


def test_dataloader_workers_read_through_a_reader_opened_in_the_parent(store):
    torch = pytest.importorskip("torch")

    class Sequences(torch.utils.data.Dataset):
        def __init__(self, reader: StoreReader, keys: list[bytes]) -> None:
            self.reader, self.keys = reader, keys

        def __len__(self) -> int:
            return len(self.keys)

        def __getitem__(self, index: int) -> str:
            return self.reader.get(self.keys[index])

    with StoreReader(store) as reader:
        dataset = Sequences(reader, reader.keys())  # opened in the parent first
        loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2,
                                             multiprocessing_context="fork")
        got = [seq for batch in loader for seq in batch]
    assert got == [r.sequence for r in generate_proteins(25)]

