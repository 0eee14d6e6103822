"""Diagnostics asv's results cannot hold: why a benchmark was skipped or failed, the
load from other processes while it ran, the thread count, the equivalence verdict.

Each benchmark process appends JSON lines to the file named by $PROOFBENCH_SIDECAR
(append of one short line is atomic on POSIX, so concurrent writers do not interleave).
`proofbench.pipeline.ingest` joins them to asv's numbers by commit, environment, benchmark and
parameters. Without the variable set (a bare `asv run`) nothing is written.

A benchmark process that hangs or is killed writes nothing; `proofbench.pipeline.asv_log` reads what
asv printed about it and makes records of the same kind.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

ENV_VAR = "PROOFBENCH_SIDECAR"
# asv's existing environment does not tell benchmarks the commit; `proofbench run` does.
COMMIT_VAR = "PROOFBENCH_COMMIT"
FORMAT_VERSION = 1
MAX_LINE = 1 << 20  # characters of one record read; written ones are far shorter (reasons are cut at 2000)


@dataclass(frozen=True)
class Record:
    """One line of the sidecar. `benchmark` is `module.Class` for a class-level event
    (setup skipped or failed) and `module.Class.method` for one benchmark's event."""

    benchmark: str
    params: tuple[str, ...]
    status: str
    reason: str = ""
    commit: str = ""
    env: str = ""
    details: dict = field(default_factory=dict)
    at: str = ""
    version: int = FORMAT_VERSION

    def key(self) -> tuple[str, str, str, tuple[str, ...]]:
        """What a record is joined on: commit, environment, benchmark, parameters."""
        return (self.commit, self.env, self.benchmark, self.params)


def write(benchmark: str, params: tuple[str, ...], status: str, reason: str = "", **details: object) -> None:
    """Append a record for the running benchmark, if a sidecar file was asked for."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return
    record = Record(
        benchmark=benchmark,
        params=tuple(str(p) for p in params),
        status=status,
        reason=reason[:2000],
        commit=os.environ.get("ASV_COMMIT") or os.environ.get(COMMIT_VAR, ""),
        env=os.environ.get("ASV_ENV_NAME", ""),
        details=details,
        at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )
    append(Path(path), [record])


def append(path: Path, records: Iterable[Record]) -> None:
    """Append records to a sidecar file, one short write per line."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for record in records:
            os.write(fd, (json.dumps(asdict(record), default=str) + "\n").encode())
    finally:
        os.close(fd)


def read(path: Path) -> Iterator[Record]:
    """Records of a sidecar file; a line that is no record (a killed writer's torn last line,
    invalid UTF-8, JSON nested too deeply, fields of the wrong type, a line over MAX_LINE) is
    passed over."""
    if not path.is_file():  # nor a FIFO, which would be waited on
        return
    with path.open(encoding="utf-8", errors="replace") as fh:
        while line := fh.readline(MAX_LINE):
            if len(line) == MAX_LINE and not line.endswith("\n"):
                while (rest := fh.readline(MAX_LINE)) and not rest.endswith("\n"):
                    pass  # the rest of an overlong line, read piece by piece
                continue
            record = _record(line)
            if record is not None:
                yield record


def _record(line: str) -> Record | None:
    try:
        data = json.loads(line)
        data["params"] = tuple(data["params"])
        record = Record(**data)
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    texts = (record.benchmark, record.status, record.reason, record.commit, record.env, *record.params)
    return record if all(isinstance(t, str) for t in texts) and isinstance(record.details, dict) else None
