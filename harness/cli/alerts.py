"""`proofbench alerts`: list the nightly check's alerts and answer them (ack, accept, withdraw).

An answer records who (--by, else git's user.name, else the login name), when and why; it is
listed in the report and in `check`'s JSON, and it can be withdrawn.
"""
from __future__ import annotations

import argparse

from proofbench.cli.common import add_db_option, engine, optional_project


def add_parser(sub) -> None:
    parser = sub.add_parser("alerts", help="list alerts, or answer one: ack (seen, expected: no longer fails the "
                            "check), accept (the new level is the reference), withdraw (the answer no longer counts)")
    verbs = parser.add_subparsers(dest="verb", required=True)
    listed = verbs.add_parser("list", help="the alerts that are open, suspected or answered")
    listed.add_argument("--all", action="store_true", help="resolved and dropped ones too")
    add_db_option(listed)
    listed.set_defaults(handler=handle_list)
    for verb, text in (("ack", "seen and expected: it no longer fails the check"),
                       ("accept", "the new level is the reference from now on")):
        one = verbs.add_parser(verb, help=text)
        one.add_argument("id", type=int, help="the alert's id (`check` prints it as 'alert ID', and `alerts list`)")
        one.add_argument("--note", default="", help="why")
        one.add_argument("--by", default=None, help="who (default: git's user.name, else the login name)")
        add_db_option(one)
        one.set_defaults(handler=handle_answer, action=verb)
    back = verbs.add_parser("withdraw", help="withdraw the alert's standing answer (the answer before it, if "
                            "any, stands again)")
    back.add_argument("id", type=int, help="the alert's id")
    back.add_argument("--by", default=None, help="who (default: git's user.name, else the login name)")
    add_db_option(back)
    back.set_defaults(handler=handle_withdraw)


def _who(args: argparse.Namespace, found) -> str:
    import getpass

    from proofbench import git
    from proofbench.errors import InputError

    if args.by:
        return args.by
    try:
        named = git.user_name(found.root) if found is not None else None
    except InputError:
        named = None
    return named or getpass.getuser()


def handle_answer(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.db.alerts import answer
    from proofbench.reports import alerts as shown

    found = optional_project(args)
    with Session(engine(args, found, create=False)) as session, session.begin():
        row = answer(session, args.id, args.action, _who(args, found), args.note)
        print(shown.answered(row))
    return 0


def handle_withdraw(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from proofbench.db.alerts import withdraw
    from proofbench.reports import alerts as shown

    found = optional_project(args)
    with Session(engine(args, found, create=False)) as session, session.begin():
        print(shown.withdrawn(withdraw(session, args.id, _who(args, found))))
    return 0


def handle_list(args: argparse.Namespace) -> int:
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from proofbench.db.alerts import Alert
    from proofbench.reports import alerts as shown

    with Session(engine(args, write=False, create=False)) as session:
        query = select(Alert).order_by(Alert.id)
        if not args.all:
            query = query.where(Alert.status.in_(("open", "suspected")))
        print(shown.listing(session.scalars(query).all()))
    return 0
