"""results.details was never written: the diagnostics it was meant for have columns of their own.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 04:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('results') as batch:
        batch.drop_column('details')


def downgrade() -> None:
    with op.batch_alter_table('results') as batch:
        batch.add_column(sa.Column('details', sa.JSON(), nullable=False, server_default='{}'))
