"""The verdict per layer: layer_times (GEMM time per name, phase and layer group) and
layer_verdicts (each layer group judged per phase against what its own layers declare)

Both tables are derived: a later analysis of a stored run fills them.

Runs ingested from now on may hold the torch profiler's ``nn.Module`` frames (``nvtx_ranges``
kind ``module``), counted in ``run_counts`` as ``module_frames``; the runs already stored were
read by a reader that kept none, so their count is 0.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('layer_times',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('name_id', sa.Integer(), nullable=False),
    sa.Column('phase', sa.String(length=16), nullable=False),
    sa.Column('layer', sa.String(length=16), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('confidence', sa.String(length=8), nullable=True),
    sa.Column('launches', sa.BigInteger(), nullable=False),
    sa.Column('total_ns', sa.BigInteger(), nullable=False),
    sa.Column('detail', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['name_id'], ['kernel_names.id'], name=op.f('fk_layer_times_name_id_kernel_names'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_layer_times_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_layer_times'))
    )
    with op.batch_alter_table('layer_times', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_layer_times_run_id'), ['run_id'], unique=False)

    op.create_table('layer_verdicts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('phase', sa.String(length=16), nullable=False),
    sa.Column('layer', sa.String(length=16), nullable=False),
    sa.Column('declared', sa.Text(), nullable=True),
    sa.Column('expected', sa.String(length=16), nullable=True),
    sa.Column('expected_kind', sa.String(length=24), nullable=True),
    sa.Column('ran', sa.String(length=16), nullable=False),
    sa.Column('total_ns', sa.BigInteger(), nullable=False),
    sa.Column('share', sa.Float(), nullable=False),
    sa.Column('outcome', sa.String(length=24), nullable=False),
    sa.Column('severity', sa.String(length=8), nullable=True),
    sa.Column('evidence_json', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_layer_verdicts_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_layer_verdicts'))
    )
    with op.batch_alter_table('layer_verdicts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_layer_verdicts_run_id'), ['run_id'], unique=False)

    op.execute("INSERT INTO run_counts (run_id, name, count) "
               "SELECT DISTINCT run_id, 'module_frames', 0 FROM run_counts")


def downgrade() -> None:
    op.execute("DELETE FROM run_counts WHERE name = 'module_frames'")
    with op.batch_alter_table('layer_verdicts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_layer_verdicts_run_id'))
    op.drop_table('layer_verdicts')
    with op.batch_alter_table('layer_times', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_layer_times_run_id'))
    op.drop_table('layer_times')
