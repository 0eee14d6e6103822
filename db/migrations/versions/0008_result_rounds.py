"""results.rounds: the raw record of a paired measurement (a variant alternated with its baseline).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 02:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('results') as batch:
        batch.add_column(sa.Column('rounds', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('results') as batch:
        batch.drop_column('rounds')
