"""alerts.step: the step's size as the detector estimated it, the figure min_step is held against.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 10:45:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('alerts') as batch:
        batch.add_column(sa.Column('step', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('alerts') as batch:
        batch.drop_column('step')
