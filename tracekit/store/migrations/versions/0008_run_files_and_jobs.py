"""Several files, several ranks: run_files (each input file of a run: what it is, how it was
placed on the run's clock and ids, what its reader counted), processes.file_index (the file a
process was recorded in) and runs.job (the job whose ranks several ingests gather into one run)

Runs stored before keep working without run_files rows (one file, placed as it was).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('run_files',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('file_index', sa.Integer(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=True),
    sa.Column('size_bytes', sa.BigInteger(), nullable=True),
    sa.Column('format', sa.String(length=64), nullable=False),
    sa.Column('host', sa.Text(), nullable=True),
    sa.Column('job', sa.Text(), nullable=True),
    sa.Column('trace_rank', sa.Integer(), nullable=True),
    sa.Column('world_size', sa.Integer(), nullable=True),
    sa.Column('gpus', sa.Text(), nullable=True),
    sa.Column('start_ns', sa.BigInteger(), nullable=True),
    sa.Column('end_ns', sa.BigInteger(), nullable=True),
    sa.Column('time_offset_ns', sa.BigInteger(), nullable=False),
    sa.Column('id_shift', sa.BigInteger(), nullable=False),
    sa.Column('counts_json', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_run_files_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run_files')),
    sa.UniqueConstraint('run_id', 'file_index', name=op.f('uq_run_files_run_id'))
    )
    with op.batch_alter_table('run_files', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_files_run_id'), ['run_id'], unique=False)
    with op.batch_alter_table('processes', schema=None) as batch_op:
        batch_op.add_column(sa.Column('file_index', sa.Integer(), nullable=True))
    # Columns and an index only: SQLite adds them in place (a rebuilt ``runs`` would
    # cascade-delete the rows of every run).
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('job', sa.Text(), nullable=True))
        batch_op.create_index('ix_runs_job', ['job'], unique=True)


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_job')
        batch_op.drop_column('job')
    with op.batch_alter_table('processes', schema=None) as batch_op:
        batch_op.drop_column('file_index')
    with op.batch_alter_table('run_files', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_files_run_id'))
    op.drop_table('run_files')
