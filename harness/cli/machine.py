"""`proofbench machine`: profile this machine, write asv's machine file, store the profile."""
from __future__ import annotations

import argparse
import json

from proofbench.cli.common import add_db_option, say


def add_parser(sub) -> None:
    parser = sub.add_parser("machine", help="profile this machine (CPU, RAM, GPUs, torch stack), write asv's "
                            "machine file, print the profile as JSON and store it in the database")
    parser.add_argument("--name", default=None, help="asv's machine name (default: the hostname and a short hash "
                        "of the machine id)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.cli.common import engine, optional_project
    from proofbench.db.fleet import store_captured
    from proofbench.machine.capture import capture, fingerprint
    from proofbench.pipeline import runner
    from proofbench.pipeline.asv import Layout

    found = optional_project(args)
    db = engine(args, found)  # first: an unreachable database stops the command before it writes anything
    profile = capture(args.name)
    layout = Layout.of(found) if found is not None else None
    if layout is not None:
        runner.write_machine_files(profile, layout)
    document = {"fingerprint": fingerprint(profile), **profile.to_dict()}
    with Session(db) as session, session.begin():
        row, created = store_captured(session, profile)
        message = _stored_message(row, created)
    print(json.dumps(document, indent=2, sort_keys=True))
    if layout is not None:
        say(f"asv machine file: {layout.home / '.asv-machine.json'}")
    if profile.gpu_note:
        say(f"GPU: none ({profile.gpu_note})")
    say(message)
    return 0


def _stored_message(row, created: bool) -> str:
    # whether the database already knew this hardware, and which row a new fingerprint replaces
    if not created:
        return f"machine {row.name!r}: fingerprint {row.fingerprint} already stored (row {row.id})"
    if row.previous_id is None:
        return f"machine {row.name!r}: stored as row {row.id} (fingerprint {row.fingerprint})"
    return (f"machine {row.name!r}: new fingerprint {row.fingerprint} stored as row {row.id}, replacing row "
            f"{row.previous_id} (the hardware or the torch stack changed)")
