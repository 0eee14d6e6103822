"""Why and how far: calibrations (each machine's measured peaks) and variant_profiles (operators,
operations per dtype, bytes moved, energy and traces of each profiled variant); see db/profiles.py.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 02:00:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('calibrations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('machine_id', sa.Integer(), nullable=False),
    sa.Column('device', sa.String(length=10), nullable=False),
    sa.Column('threads', sa.Integer(), nullable=False),
    sa.Column('torch_version', sa.String(length=100), nullable=False),
    sa.Column('document', sa.JSON(), nullable=False),
    sa.Column('measured_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['machine_id'], ['machines.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('machine_id', 'device', 'threads')
    )
    with op.batch_alter_table('calibrations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_calibrations_machine_id'), ['machine_id'], unique=False)

    op.create_table('variant_profiles',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('machine_id', sa.Integer(), nullable=False),
    sa.Column('subject', sa.String(length=200), nullable=False),
    sa.Column('size', sa.String(length=50), nullable=False),
    sa.Column('variant', sa.String(length=100), nullable=False),
    sa.Column('device', sa.String(length=10), nullable=False),
    sa.Column('threads', sa.Integer(), nullable=False),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=10), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('bound', sa.String(length=10), nullable=False),
    sa.Column('kind', sa.String(length=10), nullable=True),
    sa.Column('items', sa.Integer(), nullable=True),
    sa.Column('call_seconds', sa.Float(), nullable=True),
    sa.Column('flops', sa.JSON(), nullable=False),
    sa.Column('flops_note', sa.Text(), nullable=False),
    sa.Column('bytes_moved', sa.Float(), nullable=True),
    sa.Column('energy_joules', sa.Float(), nullable=True),
    sa.Column('energy_calls', sa.Integer(), nullable=False),
    sa.Column('energy_source', sa.String(length=10), nullable=False),
    sa.Column('energy_caveat', sa.Text(), nullable=False),
    sa.Column('energy_reason', sa.Text(), nullable=False),
    sa.Column('operators', sa.JSON(), nullable=False),
    sa.Column('traces', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['machine_id'], ['machines.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('variant_profiles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_variant_profiles_machine_id'), ['machine_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_variant_profiles_subject'), ['subject'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('variant_profiles', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_variant_profiles_subject'))
        batch_op.drop_index(batch_op.f('ix_variant_profiles_machine_id'))
    op.drop_table('variant_profiles')
    with op.batch_alter_table('calibrations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_calibrations_machine_id'))
    op.drop_table('calibrations')
