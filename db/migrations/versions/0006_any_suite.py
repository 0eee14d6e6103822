"""Any asv suite: plain benchmarks (benchmarks.kind), the commit date asv recorded
(commits.results_date, which orders commits without a repository), and columns wide enough
for what asv writes (environment and benchmark names, versions, units, parameter keys).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26 02:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

# (table, column, narrow, wide)
_WIDER = (
    ('environments', 'name', 400, 1000),
    ('benchmarks', 'name', 400, 1000),
    ('benchmarks', 'version', 100, 200),
    ('benchmarks', 'unit', 50, 100),
    ('results', 'params_key', 400, 2000),
    ('alerts', 'params_key', 400, 2000),
)


def _resize(wide: bool) -> None:
    for table, column, narrow, widened in _WIDER:
        before, after = (narrow, widened) if wide else (widened, narrow)
        with op.batch_alter_table(table) as batch:
            batch.alter_column(column, existing_type=sa.String(length=before), type_=sa.String(length=after),
                               existing_nullable=False)


def upgrade() -> None:
    _resize(True)
    with op.batch_alter_table('benchmarks') as batch:
        batch.add_column(sa.Column('kind', sa.String(length=10), nullable=False, server_default='subject'))
    with op.batch_alter_table('commits') as batch:
        batch.add_column(sa.Column('results_date', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('commits') as batch:
        batch.drop_column('results_date')
    with op.batch_alter_table('benchmarks') as batch:
        batch.drop_column('kind')
    _resize(False)
