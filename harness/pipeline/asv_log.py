"""What asv printed about benchmarks that could not speak for themselves.

A benchmark process that hangs or is killed writes no sidecar record; `from_asv_log` reads
what `asv run --show-stderr` printed about it and makes records of the sidecar's kind, marked
`details["source"] == "asv"`, which `proofbench run` appends after the run: "timeout after
N s", "killed: out of memory", "killed by signal N (NAME)", or the exception's last line.
"""
from __future__ import annotations

import ast
import datetime as dt
import re
import signal
from typing import Iterator

from proofbench.measure.sidecar import Record

LOG_SOURCE = "asv"
TIMEOUT_STATUS = -256  # asv's exit status for a benchmark it killed at its timeout
_ITEM = re.compile(r"^\[\s*\d+(?:\.\d+)?%\] (?P<dots>·+) (?P<text>.*)$")
_NAME = re.compile(r"^(?P<name>[A-Za-z_]\w*(?:\.\w+){2,})\s+(?P<status>.*)$")
_SETUP = re.compile(r"^Setting up (?P<key>\S+)")
_SETUP_ITEM = "<setup_cache>"
_PARAMS = re.compile(r"^For parameters: (?P<params>.*)$")
_TIMED_OUT = re.compile(r"^asv: benchmark timed out \(timeout (?P<seconds>[\d.]+)s\)$")
_EXIT = re.compile(r"^asv: (?:benchmark|setup_cache) failed \(exit status (?P<code>-?\d+)\)$")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<line>[A-Za-z_]\w*(?:: .*)?)$")
_ALLOCATION = re.compile(r"MemoryError|std::bad_alloc|out of memory|can't allocate memory|cannot allocate memory",
                         re.IGNORECASE)


def from_asv_log(log: str, commit: str, oom_kills: int = 0) -> list[Record]:
    """Failure records for what `asv run --show-stderr` printed under each benchmark's name.

    One record per parameter set with a timeout or a traceback; one with empty `params` per
    benchmark whose process ended with a non-zero status or whose setup_cache failed (it
    stands for every failed parameter set nothing else explains). `oom_kills` is how many
    processes the kernel's OOM killer ended during the run: a SIGKILL is called "killed: out
    of memory" only when that accounts for every SIGKILL in the log, or when the process's
    own output names a failed allocation; otherwise "killed by signal 9 (SIGKILL)".
    """
    dumps = _dumps(log.splitlines())
    kills = sum(1 for _, text in dumps if _signal(_exit_code(text)) == signal.SIGKILL)
    oom = kills > 0 and oom_kills >= kills
    return [record for name, text in dumps for record in _records_of(name, text, commit, oom)]


def _dumps(lines: list[str]) -> list[tuple[str, list[str]]]:
    # (benchmark name, the stderr asv printed under it). A benchmark skipped because its
    # setup_cache failed gets one line: "setup_cache: <reason>".
    dumps: list[tuple[str, list[str]]] = []
    item: str | None = None
    setup: list[str] = []
    dump: list[str] | None = None
    indent = 0
    for line in lines:
        match = _ITEM.match(line)
        if match is None:
            if dump is not None:
                dump.append(line[indent:] if line[:indent].isspace() else line.strip())
            continue
        dots, text = len(match.group("dots")), match.group("text")
        dump = None
        if dots == 4 and item is not None:
            dump, indent = [text], match.start("text")
            if item == _SETUP_ITEM:
                setup = dump
            else:
                dumps.append((item, dump))
        elif dots != 3:
            item = None
        elif _SETUP.match(text):
            item, setup = _SETUP_ITEM, []
        elif bench := _NAME.match(text):
            item = bench.group("name")
            if "setup_cache failed" in bench.group("status"):
                dumps.append((item, ["setup_cache: " + (_reason(setup, setup=True) if setup else "failed")]))
    return dumps


def _records_of(name: str, text: list[str], commit: str, oom: bool) -> list[Record]:
    klass, method = name.rsplit(".", 1)

    def record(params: tuple[str, ...], reason: str) -> Record:
        return Record(klass, params, "failed", reason[:2000], commit=commit,
                      details={"method": method, "source": LOG_SOURCE},
                      at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))

    if len(text) == 1 and text[0].startswith("setup_cache: "):
        return [record((), text[0])]
    code = _exit_code(text)
    records = [record(params, reason) for params, block in _blocks(text)
               if (reason := _block_reason(block, code))]
    if code not in (None, 0):
        records.append(record((), _exit_reason(code, oom)))
    return records


def _blocks(text: list[str]) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    params: tuple[str, ...] = ()
    block: list[str] = []
    for line in text:
        match = _PARAMS.match(line)
        if match is None:
            block.append(line)
            continue
        if block:
            yield params, block
        params, block = _parse_params(match.group("params")), []
    if block:
        yield params, block


def _parse_params(text: str) -> tuple[str, ...]:
    # asv prints each value's repr, joined by ", ": "'raises', 'tiny'".
    try:
        values = ast.literal_eval(f"({text},)")
    except (ValueError, SyntaxError):
        return (text,)
    return tuple(str(v) for v in values)


def _block_reason(block: list[str], code: int | None) -> str:
    # A timeout, else the traceback's last line, else an allocation failure named in the
    # output of a process that was then killed; "" when the block says nothing certain.
    for line in block:
        timed_out = _TIMED_OUT.match(line.strip())
        if timed_out:
            return f"timeout after {float(timed_out.group('seconds')):g} s"
    if any(line.startswith("Traceback") for line in block):
        return _reason(block)
    if _signal(code) is not None and any(_ALLOCATION.search(line) for line in block):
        return "killed: out of memory"
    return ""


def _reason(block: list[str], setup: bool = False) -> str:
    code = _exit_code(block)
    if setup and code == TIMEOUT_STATUS:
        return "timed out"
    lines = [line for line in block if line.strip() and not line[0].isspace() and not line.startswith(
        ("asv:", "Traceback", "For parameters:"))]
    exception = _EXCEPTION.match(lines[-1]) if lines else None
    text = exception.group("line") if exception else (lines[-1] if lines else "")
    if _ALLOCATION.search(text) and not text.startswith("out of memory"):
        text = f"out of memory: {text}"
    return text or (_exit_reason(code, False) if code else "failed without output")


def _exit_code(text: list[str]) -> int | None:
    codes = [int(m.group("code")) for line in text if (m := _EXIT.match(line.strip()))]
    return codes[-1] if codes else None


def _signal(code: int | None) -> int | None:
    # asv reports a signal as a negative status; a shell would report 128 + N.
    if code is None or code == TIMEOUT_STATUS:
        return None
    if code < 0:
        return -code
    return code - 128 if code > 128 else None


def _exit_reason(code: int, oom: bool) -> str:
    if code == TIMEOUT_STATUS:
        return "timed out"
    number = _signal(code)
    if number is None:
        return f"exit status {code}"
    if number == signal.SIGKILL and oom:
        return "killed: out of memory"
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = "unknown signal"
    return f"killed by signal {number} ({name})"
