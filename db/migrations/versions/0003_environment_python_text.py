"""environments.python holds the interpreter asv ran with, a full path for asv's `existing`
environment: a checkout under a long path overflowed its 40 characters on PostgreSQL.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 01:30:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('environments') as batch:
        batch.alter_column('python', existing_type=sa.String(length=40), type_=sa.Text(),
                           existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('environments') as batch:
        batch.alter_column('python', existing_type=sa.Text(), type_=sa.String(length=40),
                           existing_nullable=False)
