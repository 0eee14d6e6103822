"""Dynamic batching of requests from concurrent clients, and the clients that send them.

`DynamicBatcher` is what an inference server does to serve many callers with one model: a
worker thread takes the first waiting request, waits at most `max_wait` seconds for more
(up to `max_batch`), hands the batch to `handle` in one call and gives each caller its own
response through a `concurrent.futures.Future`. `max_batch=1` is the plain server that
answers one request at a time. A batch whose `handle` raises is retried one request at a
time, so a bad request fails alone and every other caller still gets its answer.

`serve` drives a batcher with several client threads (local only, no sockets), each
sending its requests one after another and timing each from submit to response.
"""
from __future__ import annotations

import itertools
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from proofbench.errors import DeclarationError, ProofbenchError

_STOP = object()  # put on the queue by close(): the worker finishes what it holds, then exits


class BatchHandlerError(ProofbenchError):
    """A batch handler broke its contract (wrong number of responses), or the batcher is closed."""


@dataclass
class _Pending:
    request: Any
    future: Future


class DynamicBatcher:
    """Collects requests from many threads into batches of at most `max_batch`.

    Use as a context manager: the worker thread starts on entry and, on exit, serves every
    request already submitted before it stops. `batch_sizes` lists the size of each batch
    handed to `handle` (retries of a failed batch included), in order.
    """

    def __init__(self, handle: Callable[[list[Any]], Sequence[Any]], max_batch: int, max_wait: float) -> None:
        if not isinstance(max_batch, int) or max_batch < 1:
            raise DeclarationError(f"DynamicBatcher: max_batch must be a positive int, got {max_batch!r}")
        if max_wait < 0:
            raise DeclarationError(f"DynamicBatcher: max_wait must be >= 0 seconds, got {max_wait!r}")
        self._handle = handle
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.batch_sizes: list[int] = []
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._worker: threading.Thread | None = None

    def __enter__(self) -> "DynamicBatcher":
        self._worker = threading.Thread(target=self._serve, name="dynamic-batcher", daemon=True)
        self._worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            self._queue.put(_STOP)
            worker.join()

    def submit(self, request: Any) -> Future:
        """Queue one request; the returned future holds its response or its exception."""
        if self._worker is None:
            raise BatchHandlerError("DynamicBatcher.submit: the batcher is not running; use it in a `with` block")
        future: Future = Future()
        self._queue.put(_Pending(request, future))
        return future

    def _serve(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch, stop = self._collect(first)
            self._run(batch)
            if stop:
                return

    def _collect(self, first: _Pending) -> tuple[list[_Pending], bool]:
        # Gather more requests until the batch is full or max_wait has passed since the first.
        batch = [first]
        deadline = time.monotonic() + self.max_wait
        while len(batch) < self.max_batch:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _run(self, batch: list[_Pending]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            responses = list(self._handle([p.request for p in batch]))
            if len(responses) != len(batch):
                raise BatchHandlerError(f"batch handler returned {len(responses)} responses "
                                        f"for {len(batch)} requests; expected one per request")
        except Exception as exc:  # noqa: BLE001 - the error goes to the caller(s), never lost
            if len(batch) == 1:
                batch[0].future.set_exception(exc)
            else:
                for pending in batch:  # isolate the failing request(s)
                    self._run([pending])
            return
        for pending, response in zip(batch, responses):
            pending.future.set_result(response)


@dataclass(frozen=True)
class ServedStream:
    """What `serve` returns: responses and latencies (seconds) in client-major order."""

    responses: tuple[Any, ...]
    latencies: tuple[float, ...]
    batch_sizes: tuple[int, ...]


def serve(batcher: DynamicBatcher, clients: Sequence[Sequence[Any]],
          clock: Callable[[], float] = time.perf_counter) -> ServedStream:
    """Run one thread per client, each sending its requests in turn and awaiting each answer.

    All clients start together. If any request fails, the first failure is raised after
    every client has finished.
    """
    if not clients:
        raise DeclarationError("serve: needs at least one client")
    offsets = list(itertools.accumulate((len(c) for c in clients), initial=0))
    responses: list[Any] = [None] * offsets[-1]
    latencies = [0.0] * offsets[-1]
    errors: list[BaseException] = []
    start = threading.Barrier(len(clients))

    def client(requests: Sequence[Any], offset: int) -> None:
        start.wait()
        for j, request in enumerate(requests):
            began = clock()
            try:
                responses[offset + j] = batcher.submit(request).result()
            except Exception as exc:  # noqa: BLE001 - re-raised below, once every client finished
                errors.append(exc)
            latencies[offset + j] = clock() - began

    with batcher:
        threads = [threading.Thread(target=client, args=pair) for pair in zip(clients, offsets)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    return ServedStream(tuple(responses), tuple(latencies), tuple(batcher.batch_sizes))
