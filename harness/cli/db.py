"""`proofbench db upgrade`: apply the schema migrations to a database."""
from __future__ import annotations

import argparse

from proofbench.cli.common import add_db_option, optional_project, say


def add_parser(sub) -> None:
    parser = sub.add_parser("db", help="database maintenance")
    db_sub = parser.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply schema migrations (an older schema is upgraded in place)")
    add_db_option(upgrade)
    upgrade.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.db.session import connect, masked, schema_revision, upgrade
    from proofbench.project import database_url

    url = database_url(args.db, optional_project(args))
    engine = connect(url, migrate=False)  # refuses a database it may not write, or of a newer proofbench
    before = schema_revision(engine)
    upgrade(engine)
    after = schema_revision(engine)
    done = "created schema" if before is None else "schema is current" if before == after else "upgraded schema"
    say(f"{done} ({after}) at {masked(url)}")
    return 0
