"""Whose work is on a GPU: the compute processes NVML lists, told apart from this one's own.

This process and the processes it started (data-loading workers) are the benchmark's own; any
other compute process on the GPU shares it with the benchmark. `others` takes NVML's list as
read (`nvmlDeviceGetComputeRunningProcesses`), so it needs no GPU to be tested.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import psutil


def own_pids() -> set[int]:
    """This process's id and its children's (those still running)."""
    own = {os.getpid()}
    try:
        own.update(child.pid for child in psutil.Process().children(recursive=True))
    except psutil.Error:
        pass  # a child gone meanwhile: the ids read so far stand
    return own


def others(listed: Iterable[Any] | None) -> tuple[tuple[int, ...] | None, bool]:
    """The ids of the listed processes that are not this one's (None: NVML could not list them),
    and whether this process or a child was among them (if not, its id may read differently
    there: another PID namespace)."""
    if listed is None:
        return None, False
    pids = {int(p.pid) for p in listed}
    own = own_pids() if pids - {os.getpid()} else {os.getpid()}  # children are read only when needed
    return tuple(sorted(pids - own)), bool(pids & own)
