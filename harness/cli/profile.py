"""`proofbench profile SUBJECT`: why each variant takes its time, how far it is from the machine's
limit, and what it costs in energy; traces and a summary on disk, the summary in the database.

Traces go to `<out>/<subject>/<size>/<variant>.trace.json`, `<out>` defaulting to the `profiles/`
folder of the project's report site, so the report links them where they lie.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from proofbench.cli.common import add_db_option, console, engine, project, say

SUMMARY_FORMAT = 1


def add_parser(sub) -> None:
    parser = sub.add_parser("profile", help="profile one call of each variant (torch.profiler, or a Python "
                            "sampler), count its FLOPs, read its energy; write traces and store a summary")
    parser.add_argument("subject", help="area.name, e.g. training.mixed_precision")
    parser.add_argument("--variant", action="append", default=None, help="only this variant (repeatable)")
    parser.add_argument("--size", default=None, help="size to profile (default: the run profile's first size)")
    parser.add_argument("--profile", default=None, help="run profile for device and thread count "
                        "(default: $PROOFBENCH_PROFILE or quick)")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: the project's site, profiles/)")
    parser.add_argument("--energy-seconds", type=float, default=1.0,
                        help="seconds of repeated calls over which energy is read (default 1)")
    parser.add_argument("--cache", type=Path, default=None, help="where subjects build their on-disk fixtures "
                        "(default: the project's work directory, profile-cache/)")
    parser.add_argument("--name", default=None, help="asv's machine name (default: the hostname and a short hash "
                        "of the machine id)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def _commit(root: Path) -> str:
    from proofbench import git
    from proofbench.errors import InputError

    try:
        return git.head(root)
    except InputError:
        return ""  # profiling a copy without git history is allowed; the row says no commit


def _write_summary(path: Path, run, found) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"format": SUMMARY_FORMAT, "profile": run.name, "device": run.device, "threads": run.torch_threads,
                "variants": [p.to_dict() for p in found]}
    path.write_text(json.dumps(document, indent=2))


def handle(args: argparse.Namespace) -> int:
    from proofbench.catalogue import load_catalogue
    from proofbench.errors import InputError
    from proofbench.measure.variant_profile import Settings, profile_subject
    from proofbench.profile import get_profile
    from proofbench.reports.output import slug

    if not args.energy_seconds > 0:
        raise InputError(f"--energy-seconds {args.energy_seconds}: expected a positive number of seconds")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise InputError(f"--out {args.out}: is a file; name a directory for the traces")
    found = project(args)
    db = engine(args, found)  # first: an unreachable database stops the command before it measures anything
    subject = load_catalogue(found).registry.get(args.subject)
    run = get_profile(args.profile, found.profiles)
    size = subject.size(args.size or run.sizes[0]).name
    variants = tuple(subject.variant(v).name for v in args.variant or ())
    out_dir = (args.out or found.site / "profiles") / slug(subject.key) / slug(size)
    cache = args.cache or found.workdir / "profile-cache"
    settings = Settings(run.device, run.torch_threads, args.energy_seconds, cache)
    say(f"profiling {subject.key} at size {size} ({run.device}, {run.torch_threads} thread(s)) ...")
    profiled = profile_subject(subject, size, out_dir, settings, variants)
    _write_summary(out_dir / "summary.json", run, profiled)
    _store_and_show(db, args.name, run, profiled, _commit(found.root))
    say(f"traces and summary: {out_dir}")
    return 0


def _store_and_show(db, name: str | None, run, found, commit: str) -> None:
    # One row per variant on this machine's row; the tables set them against its calibration.
    from sqlalchemy.orm import Session

    from proofbench.db.fleet import store_captured
    from proofbench.db.profiles import find_calibration, profile_row
    from proofbench.machine.capture import capture
    from proofbench.reports.profiles import terminal_tables, views

    with Session(db) as session, session.begin():
        machine, _ = store_captured(session, capture(name))
        rows = [profile_row(machine.id, p, run.device, run.torch_threads, commit) for p in found]
        session.add_all(rows)
        calibration = find_calibration(session, machine.id, run.device, run.torch_threads)
        shown = views(rows, [calibration] if calibration else [], lambda *key: None)
        for table in terminal_tables(next(iter(shown.values()))):
            console.print(table)
    if calibration is None:
        say(f"no calibration at {run.device}, {run.torch_threads} thread(s): `proofbench calibrate "
                      f"--profile {run.name}` measures the peaks the shares are set against")
