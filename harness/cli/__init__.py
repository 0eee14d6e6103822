"""The `proofbench` command line. The one place errors become exit codes.

0    done, nothing wrong
1    `check` found a regression
2    a usage or input error (one line naming the file, field or value), or a refused file
3    an internal error: a bug in proofbench, never a finding about the code measured
     (one line; $PROOFBENCH_DEBUG=1 shows the traceback)
130  interrupted (Ctrl-C or SIGTERM, a job's timeout); nothing is half-written: what was
     stored before is kept, an unfinished check records nothing, and results asv finished
     are taken by the next `ingest` or `history`
141  the reader of standard output went away (`proofbench check | head -1`), as a tool
     killed by SIGPIPE: what was done before is kept, nothing more is printed
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import traceback

from proofbench.cli import (
    alerts,
    bisect,
    calibrate,
    check,
    compare,
    db,
    gate,
    generate,
    history,
    ingest,
    init,
    machine,
    profile,
    report,
    run,
    table,
)
from proofbench.cli.common import INTERRUPTED, error_line, known
from proofbench.errors import ProofbenchError

COMMANDS = (init, run, history, check, gate, bisect, alerts,
            ingest, report, table, compare, machine, calibrate, profile, generate, db)
INTERNAL_ERROR = 3
CLOSED_OUTPUT = 128 + signal.SIGPIPE
DEBUG_VAR = "PROOFBENCH_DEBUG"
_KEPT = {  # what an interrupted command leaves, by command
    "check": "an unfinished check records nothing; the alerts of the one before stand",
    "gate": "a gate stores nothing",
    "bisect": "a bisection stores its culprit only when it ends",
    "ingest": "each file is stored whole or not at all; run it again to take the rest",
    "history": "results asv finished are taken by the next `ingest` or `history`",
    "run": "results asv finished are taken by the next `ingest`",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand (one module each in this package)."""
    parser = argparse.ArgumentParser(prog="proofbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `proofbench` script."""
    args = build_parser().parse_args(argv)
    try:
        code = args.handler(args)
        sys.stdout.flush()  # what is still buffered goes now, where a reader gone is caught, not at exit
        return code
    except KeyboardInterrupt:
        kept = _KEPT.get(args.command, "what was stored before the interrupt is kept")
        print(f"proofbench: interrupted; nothing is half-written: {kept}", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError as exc:
        if not _output_closed():
            return _internal(exc, args)
        return CLOSED_OUTPUT
    except Exception as exc:  # noqa: BLE001 - the one place an error becomes an exit code
        said = known(exc)  # proofbench's own errors, and a database's failure midway
        if isinstance(said, ProofbenchError):
            print(f"proofbench: {error_line(said, args)}", file=sys.stderr)
            return said.exit_code
        return _internal(exc, args)


def _internal(exc: Exception, args: argparse.Namespace) -> int:
    if os.environ.get(DEBUG_VAR):
        traceback.print_exc()
    print(f"proofbench: {error_line(exc, args)} (a bug in proofbench; set {DEBUG_VAR}=1 for the traceback)",
          file=sys.stderr)
    return INTERNAL_ERROR


def _output_closed() -> bool:
    """Whether standard output's reader has gone (a pipe closed by `head`: polling its end
    reports an error, or a hang-up on the BSDs and macOS); if so, standard output now writes
    nowhere, so that Python's flush at exit does not fail on it again. A broken pipe of
    anything else is no such thing."""
    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        closed = any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no file descriptor, or no poll on this system
        return False
    if closed:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return closed


if __name__ == "__main__":
    sys.exit(main())


def run() -> None:
    """The `proofbench` script and `python -m proofbench`: `main`, then exit with its status. A
    Ctrl-C that lands as the command finishes still exits 130 (or the command's own status once
    it is done), never by the signal itself."""
    signal.signal(signal.SIGTERM, _terminated)
    try:
        code = main()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: an interrupt now changes nothing
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except KeyboardInterrupt:
        code = INTERRUPTED
    sys.exit(code)


def _terminated(signum, frame) -> None:
    # SIGTERM (a CI job's timeout, `kill`) ends every command as Ctrl-C does: exit 130, its files
    # saying so, nothing half-written; not 143 with nothing said
    raise KeyboardInterrupt
