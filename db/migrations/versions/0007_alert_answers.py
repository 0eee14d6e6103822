"""Alerts that measure again and people who answer them: an alert's confirmation and bisection, and
alert_actions (acknowledged or accepted, by whom, when and why; withdrawn rather than deleted).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 06:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('alerts') as batch:
        batch.add_column(sa.Column('confirmation', sa.JSON(), nullable=True))
        batch.add_column(sa.Column('culprit_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('bisection', sa.JSON(), nullable=True))
        batch.create_foreign_key('fk_alerts_culprit', 'commits', ['culprit_id'], ['id'])
    op.create_table('alert_actions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('alert_id', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=10), nullable=False),
    sa.Column('by', sa.Text(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('withdrawn_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('withdrawn_by', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['alert_id'], ['alerts.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_alert_actions_alert_id'), 'alert_actions', ['alert_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_alert_actions_alert_id'), table_name='alert_actions')
    op.drop_table('alert_actions')
    with op.batch_alter_table('alerts') as batch:
        batch.drop_constraint('fk_alerts_culprit', type_='foreignkey')
        batch.drop_column('bisection')
        batch.drop_column('culprit_id')
        batch.drop_column('confirmation')
