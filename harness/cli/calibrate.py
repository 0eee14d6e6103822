"""`proofbench calibrate`: measure this machine's matmul peaks and memory bandwidth once, and store them.

A command of its own rather than an option of `proofbench machine`: capturing a profile reads
a few files in a second, while a calibration keeps the cores busy for tens of seconds, wants a
quiet machine, and runs at a run profile's device and thread count.
"""
from __future__ import annotations

import argparse

from proofbench.cli.common import add_db_option, engine, optional_project, say


def add_parser(sub) -> None:
    parser = sub.add_parser("calibrate", help="measure this machine's matmul FLOP/s per dtype and copy bandwidth "
                            "at a profile's device and thread count; stored once per machine fingerprint")
    parser.add_argument("--profile", default=None, help="run profile whose device and thread count to calibrate "
                        "at (default: $PROOFBENCH_PROFILE or quick)")
    parser.add_argument("--name", default=None, help="asv's machine name (default: the hostname and a short hash "
                        "of the machine id)")
    parser.add_argument("--again", action="store_true", help="measure again and replace the stored calibration")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per size (default 5)")
    parser.add_argument("--sizes", default=None, help="comma-separated matrix sizes (default 256,512,1024; "
                        "2048,4096,8192 on a CUDA profile)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def _sizes(text: str | None) -> tuple[int, ...] | None:
    from proofbench.errors import InputError

    if text is None:
        return None
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 16:
        raise InputError(f"--sizes {text!r}: expected comma-separated integers of at least 16, e.g. 256,512,1024")
    return sizes


def handle(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.db.fleet import store_captured
    from proofbench.db.profiles import find_calibration, store_calibration
    from proofbench.machine import calibrate
    from proofbench.machine.capture import capture
    from proofbench.profile import get_profile
    from proofbench.reports.profiles import calibration_lines

    found = optional_project(args)
    db = engine(args, found)
    run = get_profile(args.profile, found.profiles if found is not None else None)
    sizes = _sizes(args.sizes)  # None: calibrate's default for the device
    machine = capture(args.name)
    with Session(db) as session, session.begin():
        row, _ = store_captured(session, machine)
        stored = find_calibration(session, row.id, run.device, run.torch_threads)
        if stored is not None and not args.again:
            say(f"machine {row.name!r} (fingerprint {row.fingerprint}) is calibrated already at "
                          f"{run.device}, {run.torch_threads} thread(s) (row {stored.id}); --again measures again")
            document = stored.document
        else:
            say(f"calibrating {run.device} at {run.torch_threads} torch thread(s) (profile {run.name}) ...")
            measured = calibrate.calibrate(run.device, run.torch_threads, sizes=sizes,
                                           repeats=args.repeats or calibrate.REPEATS, copy_bytes=calibrate.COPY_BYTES)
            stored, _ = store_calibration(session, row.id, measured.to_dict(), replace=True)
            document = stored.document
    for line in calibration_lines(calibrate.Calibration.from_dict(document)):
        print(line)
    return 0
