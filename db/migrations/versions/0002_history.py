"""The nightly check's memory: check_runs and alerts (see db/alerts.py).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 05:02:13.906120
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('check_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('branch', sa.String(length=200), nullable=False),
    sa.Column('since', sa.Text(), nullable=False),
    sa.Column('series', sa.Integer(), nullable=False),
    sa.Column('new_regressions', sa.Integer(), nullable=False),
    sa.Column('new_improvements', sa.Integer(), nullable=False),
    sa.Column('open_regressions', sa.Integer(), nullable=False),
    sa.Column('resolved', sa.Integer(), nullable=False),
    sa.Column('exit_code', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('alerts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('machine_id', sa.Integer(), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('benchmark_id', sa.Integer(), nullable=False),
    sa.Column('params_key', sa.String(length=400), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('commit_id', sa.Integer(), nullable=False),
    sa.Column('previous_commit_id', sa.Integer(), nullable=True),
    sa.Column('direction', sa.Integer(), nullable=False),
    sa.Column('regression', sa.Boolean(), nullable=False),
    sa.Column('before', sa.Float(), nullable=False),
    sa.Column('after', sa.Float(), nullable=False),
    sa.Column('p_value', sa.Float(), nullable=False),
    sa.Column('score', sa.Float(), nullable=False),
    sa.Column('status', sa.String(length=10), nullable=False),
    sa.Column('raised_by_id', sa.Integer(), nullable=False),
    sa.Column('seen_by_id', sa.Integer(), nullable=False),
    sa.Column('resolved_by_id', sa.Integer(), nullable=True),
    sa.Column('resolved_at_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['benchmark_id'], ['benchmarks.id'], ),
    sa.ForeignKeyConstraint(['commit_id'], ['commits.id'], ),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], ),
    sa.ForeignKeyConstraint(['machine_id'], ['machines.id'], ),
    sa.ForeignKeyConstraint(['previous_commit_id'], ['commits.id'], ),
    sa.ForeignKeyConstraint(['raised_by_id'], ['check_runs.id'], ),
    sa.ForeignKeyConstraint(['resolved_at_id'], ['commits.id'], ),
    sa.ForeignKeyConstraint(['resolved_by_id'], ['check_runs.id'], ),
    sa.ForeignKeyConstraint(['seen_by_id'], ['check_runs.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('machine_id', 'environment_id', 'benchmark_id', 'params_key', 'commit_id', 'direction')
    )
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alerts_benchmark_id'), ['benchmark_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_alerts_machine_id'), ['machine_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alerts_machine_id'))
        batch_op.drop_index(batch_op.f('ix_alerts_benchmark_id'))

    op.drop_table('alerts')
    op.drop_table('check_runs')
