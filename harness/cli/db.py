"""`proofbench db upgrade`: apply the schema migrations to a database."""
from __future__ import annotations

import argparse

from proofbench.cli.common import add_db_option, console, optional_project


def add_parser(sub) -> None:
    parser = sub.add_parser("db", help="database maintenance")
    db_sub = parser.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply schema migrations (an older schema is upgraded in place)")
    add_db_option(upgrade)
    upgrade.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.db.session import engine_for, has_schema, masked, upgrade
    from proofbench.project import database_url

    url = database_url(args.db, optional_project(args))
    engine = engine_for(url)
    existed = has_schema(engine)
    upgrade(engine)
    console.print(f"{'upgraded' if existed else 'created'} schema at {masked(url)}", markup=False)
    return 0
