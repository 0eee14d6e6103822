"""`proofbench db upgrade`: apply the schema migrations to a database."""
from __future__ import annotations

import argparse

from proofbench.cli.common import add_db_option, console


def add_parser(sub) -> None:
    parser = sub.add_parser("db", help="database maintenance")
    db_sub = parser.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply schema migrations (an older schema is upgraded in place)")
    add_db_option(upgrade)
    upgrade.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.db.session import (
        database_url,
        engine_for,
        has_schema,
        masked,
        upgrade,
    )

    engine = engine_for(args.db)
    existed = has_schema(engine)
    upgrade(engine)
    console.print(f"{'upgraded' if existed else 'created'} schema at {masked(database_url(args.db))}")
    return 0
