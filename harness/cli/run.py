"""`proofbench run`: measure a profile on the checkout in hand through asv, ingest, report."""
from __future__ import annotations

import argparse

from proofbench.cli.common import (
    add_db_option,
    add_profile_option,
    engine,
    measuring,
    progress_bar,
    project,
    regenerate,
    say,
    show_ingest,
)


def add_parser(sub) -> None:
    parser = sub.add_parser("run", help="measure a profile on the checkout in hand, ingest, report")
    add_profile_option(parser)
    parser.add_argument("--bench", metavar="SUBJECT|REGEX", help="only this subject (lmdb_read, loading.lmdb_read), "
                        "or the benchmarks whose name matches")
    parser.add_argument("--no-report", action="store_true", help="skip rendering the HTML site")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.catalogue import load_catalogue
    from proofbench.machine.capture import capture
    from proofbench.pipeline import runner
    from proofbench.pipeline.asv import Layout
    from proofbench.pipeline.generate import bench_pattern, selected
    from proofbench.profile import get_profile
    from proofbench.reports import table

    found = project(args)
    layout = Layout.of(found)
    profile = get_profile(args.profile, found.profiles)
    catalogue = load_catalogue(found)
    db = engine(args, found)
    with measuring(found):  # from the suite to the ingest: a history or check there at once is refused
        regenerate(catalogue, layout)
        machine = capture()
        say(f"profile {profile.name}: {profile.description} (device {profile.device}, "
            f"{profile.torch_threads} torch thread(s))")
        with progress_bar("starting asv") as update:
            bench = bench_pattern(catalogue.registry, args.bench) if args.bench else None
            measured = runner.measure(db, layout, catalogue, profile, machine, bench, on_progress=update)
    status = show_ingest(measured.ingested)
    table.print_latest(db, machine.name, catalogue.claims, selected(catalogue.registry, bench) if bench else None)
    if not args.no_report:
        from proofbench.reports.render import render

        say(f"report: {render(db, found.site)}")
    return status
