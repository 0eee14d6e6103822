"""results.gpu: what the GPUs did while a CUDA profile's benchmark ran (throttling, clocks, other processes).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 02:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('results') as batch:
        batch.add_column(sa.Column('gpu', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('results') as batch:
        batch.drop_column('gpu')
