"""The dynamic batcher: every caller gets its own response under concurrency, batches respect
their bound, and a request that raises fails alone."""
from __future__ import annotations

import threading
from concurrent.futures import wait

import pytest

from proofbench.errors import DeclarationError
from proofbench.subjects.workloads.request_batcher import BatchHandlerError, DynamicBatcher, serve


def _double(batch):
    return [2 * x for x in batch]


def test_every_caller_gets_its_own_response_under_concurrency():
    batcher = DynamicBatcher(_double, max_batch=4, max_wait=0.001)
    clients = [[100 * c + j for j in range(25)] for c in range(8)]
    served = serve(batcher, clients)
    assert list(served.responses) == [2 * x for client in clients for x in client]
    assert len(served.latencies) == 200 and min(served.latencies) >= 0
    assert sum(served.batch_sizes) == 200
    assert max(served.batch_sizes) <= 4


def test_waiting_requests_are_batched_up_to_max_batch():
    # The first batch blocks the worker until nine more requests wait; they then go as 4, 4, 1.
    release = threading.Event()

    def handle(batch):
        if batch == ["first"]:
            release.wait(5)
        return [s.upper() for s in batch]

    with DynamicBatcher(handle, max_batch=4, max_wait=0.0) as batcher:
        futures = [batcher.submit("first")]
        while not batcher.batch_sizes:  # the worker has taken "first"
            threading.Event().wait(0.001)
        futures += [batcher.submit(f"r{i}") for i in range(9)]
        release.set()
        wait(futures, timeout=5)
    assert [f.result() for f in futures] == ["FIRST"] + [f"R{i}" for i in range(9)]
    assert batcher.batch_sizes == [1, 4, 4, 1]


def test_a_request_that_raises_fails_alone():
    def handle(batch):
        if "bad" in batch:
            raise ValueError("cannot embed 'bad'")
        return [s + "!" for s in batch]

    release = threading.Event()

    def gated(batch):
        if batch == ["gate"]:
            release.wait(5)
        return handle(batch)

    with DynamicBatcher(gated, max_batch=8, max_wait=0.0) as batcher:
        gate = batcher.submit("gate")
        while not batcher.batch_sizes:
            threading.Event().wait(0.001)
        futures = [batcher.submit(s) for s in ("a", "bad", "b", "c")]
        release.set()
        wait([gate, *futures], timeout=5)
    assert batcher.batch_sizes[:2] == [1, 4]  # the four were batched, then retried one by one
    assert [futures[i].result() for i in (0, 2, 3)] == ["a!", "b!", "c!"]
    with pytest.raises(ValueError, match="cannot embed 'bad'"):
        futures[1].result()


def test_serve_raises_the_failure_after_every_client_finished():
    answered = []

    def handle(batch):
        if -1 in batch:
            raise KeyError("no such request")
        answered.extend(batch)
        return batch

    with pytest.raises(KeyError, match="no such request"):
        serve(DynamicBatcher(handle, max_batch=2, max_wait=0.0), [[1, 2], [-1, 3], [4]])
    assert sorted(answered) == [1, 2, 3, 4]


def test_a_handler_returning_the_wrong_count_fails_its_callers():
    with DynamicBatcher(lambda batch: [], max_batch=1, max_wait=0.0) as batcher:
        future = batcher.submit("x")
        with pytest.raises(BatchHandlerError, match="returned 0 responses for 1 requests"):
            future.result(timeout=5)


def test_misuse_is_refused_with_the_reason():
    with pytest.raises(DeclarationError, match="max_batch must be a positive int"):
        DynamicBatcher(_double, max_batch=0, max_wait=0.0)
    with pytest.raises(DeclarationError, match="max_wait must be >= 0"):
        DynamicBatcher(_double, max_batch=2, max_wait=-1.0)
    with pytest.raises(BatchHandlerError, match="not running"):
        DynamicBatcher(_double, max_batch=2, max_wait=0.0).submit(1)
    with pytest.raises(DeclarationError, match="at least one client"):
        serve(DynamicBatcher(_double, max_batch=2, max_wait=0.0), [])
