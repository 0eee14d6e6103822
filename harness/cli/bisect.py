"""`proofbench bisect ALERT`: the first bad commit of an alert's step, among the commits between
its previous measured commit and its own that no run measured; stored with the alert."""
from __future__ import annotations

import argparse

from proofbench.cli.common import add_db_option, bench, engine, measuring, project, say


def add_parser(sub) -> None:
    parser = sub.add_parser("bisect", help="measure the commits an alert's step lies among until its first bad "
                            "commit is known")
    parser.add_argument("id", type=int, help="the alert's id (proofbench alerts list)")
    parser.add_argument("--tries", type=int, default=9, help="measurements of a commit beyond the first two while "
                        "its side cannot be told (the side's odds short of 99 to 1; default 9: up to 10 runs)")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help="most seconds to measure for (default: no bound); where it runs out the bisection "
                        "gives the range it narrowed the step to, if its check holds")
    parser.add_argument("--profile", default=None, help="the profile the commits are measured with (default: the "
                        "one the alert's series was measured with)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.analysis import bisect
    from proofbench.analysis.series import measured_with
    from proofbench.db.alerts import find
    from proofbench.errors import InputError
    from proofbench.reports import alerts as shown

    if args.tries < 1:
        raise InputError(f"--tries must be at least 1, got {args.tries}")
    if args.budget is not None and not args.budget > 0:
        raise InputError(f"--budget must be a positive number of seconds, got {args.budget:g}")
    found = project(args)
    with Session(engine(args, found, create=False)) as session, session.begin():
        alert = find(session, args.id)
        if alert.status == "dropped":  # measured again, it showed no step: there is none to place
            raise InputError(f"alert {alert.id} was dropped: {_why_dropped(alert)}; there is no step to bisect")
        profile = args.profile or measured_with(session, alert.machine.name, alert.benchmark.name).get(
            (alert.machine.name, alert.benchmark.name, alert.params_key))
        with measuring(found):
            ready = bench(found, profile)
            older, newer = bisect.span(alert)  # a confirmed step's: the two commits its re-measurement told apart
            say(f"bisecting alert {alert.id}: {alert.benchmark.name} between "
                f"{older[:8] if older else 'the start'} and {newer[:8]}")
            bisect.locate(session, alert, ready, tries=args.tries, budget=args.budget)
        print(shown.bisected(alert))
        named = alert.culprit is not None  # read before the session closes: its objects expire then
    return 0 if named else 1


def _why_dropped(alert) -> str:
    # what dropped it, as the alert keeps it: its re-measurement, or its history
    from proofbench.reports.check import GONE, confirmation

    return confirmation(alert.confirmation) if (alert.confirmation or {}).get("outcome") == "dropped" else GONE
