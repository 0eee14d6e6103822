"""Work done in processes forked one after another from a benchmark process.

A pair measured in one process holds only that process's draw of memory placement (see
`proofbench.variation`); measured in several, each preparing its own workload, the spread
between them is measured too. asv runs each benchmark in one process of its own (its `rounds`
apply to timing benchmarks only), so the benchmark forks: `each(task, count)` runs task(0),
task(1), ... in a child forked for each, one at a time (never side by side: they would compete
for the cores they measure), and returns what each returned, passed back through a pipe.

A child prepares everything it measures itself: forking after the parent ran parallel torch
work can leave the child's thread pool unusable, and forking after the workload was prepared
shares its placement, the very thing measured. A child dies with its parent (asv's timeout
kills the benchmark process, not its children); one that dies or returns nothing raises
`ProcessDied` here, and an exception raised in it is raised again here, Skip included. Where a
child cannot be forked (no `os.fork`, or a CUDA context that a fork would break), the tasks run
in this process one after another: each still prepares its own workload.
"""
from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys
from typing import Callable, TypeVar

T = TypeVar("T")
_PR_SET_PDEATHSIG = 1


class ProcessDied(RuntimeError):
    """A forked child ended without passing back its result (killed, crashed, or out of memory)."""


def can_fork(device: str) -> bool:
    """Whether measuring processes can be forked here for a profile on `device`."""
    return hasattr(os, "fork") and device == "cpu"


def each(task: Callable[[int], T], count: int, fork: bool = True) -> list[T]:
    """[task(0), ..., task(count - 1)], each in a child forked for it where `fork`, else here."""
    return [_forked(task, i) if fork else task(i) for i in range(count)]


def _forked(task: Callable[[int], T], i: int) -> T:
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's stack
        try:
            os.close(read)
            _die_with(parent)
            payload = _answer(lambda: ("ok", task(i)))
            with os.fdopen(write, "wb") as pipe:
                pipe.write(payload)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise ProcessDied(f"measuring process {i + 1} ended without a result ({_ended(status)})")
    kind, value = pickle.loads(data)
    if kind == "raised":
        raise value
    return value


def _answer(work: Callable[[], tuple[str, object]]) -> bytes:
    # what goes back through the pipe: the result, or the exception (as itself where it can be
    # pickled and read back, else as a RuntimeError naming it)
    try:
        return pickle.dumps(work())
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        try:
            payload = pickle.dumps(("raised", exc))
            pickle.loads(payload)
            return payload
        except Exception:  # noqa: BLE001
            return pickle.dumps(("raised", RuntimeError(f"{type(exc).__name__}: {exc}")))


def _die_with(parent: int) -> None:
    # Linux: the kernel kills this child when its parent ends; elsewhere, nothing to do
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"
