"""Alembic environment: runs migrations on the connection `db.session.upgrade` hands in."""
from __future__ import annotations

from alembic import context

import proofbench.db.alerts  # noqa: F401  (its tables belong to the schema too)
import proofbench.db.profiles  # noqa: F401  (so do these)
from proofbench.db.models import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `proofbench db upgrade` (db.session.upgrade)")

context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
