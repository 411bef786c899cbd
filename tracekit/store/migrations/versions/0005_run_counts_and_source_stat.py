"""Record counts per run, the inputs' file signature, NVTX events indexed by run only

``run_counts`` holds how many records of each kind a run has, counted once at ingest: the
document, the findings and ``tracekit runs`` used to count a run's NVTX events and runtime
calls again for every report. This migration counts the runs already stored.

``runs.source_stat`` is the device, inode, size and modification time of each input file
when it was read: ``tracekit analyze`` of the same unchanged file finds its run without
hashing the file again (``--rehash`` forces the hash).

NVTX events were indexed by (run, thread, start); nothing looks them up that way, and the
index, updated at a random place per event, made the copy of a real trace's events twice as
slow. They are now indexed by run (appended at the end) and, for the few rows that create
a domain, by a partial index.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

#: The counts as tracekit/store/counts.py takes them, written out here because a migration
#: must not change when that code does.
_COUNTS = {
    "kernels": "SELECT COUNT(*) FROM kernels WHERE run_id = :run_id",
    "kernel_names": "SELECT COUNT(*) FROM kernel_names WHERE run_id = :run_id",
    "runtime_calls": "SELECT COUNT(*) FROM runtime_calls WHERE run_id = :run_id",
    "memory_ops": "SELECT COUNT(*) FROM memory_ops WHERE run_id = :run_id",
    "cpu_ops": "SELECT COUNT(*) FROM cpu_ops WHERE run_id = :run_id",
    "processes": "SELECT COUNT(*) FROM processes WHERE run_id = :run_id",
    "threads": "SELECT COUNT(*) FROM threads WHERE run_id = :run_id",
    "nvtx_ranges": "SELECT COUNT(*) FROM nvtx_ranges WHERE run_id = :run_id "
                   "AND kind IN ('push_pop', 'start_end')",
    "nvtx_marks": "SELECT COUNT(*) FROM nvtx_ranges WHERE run_id = :run_id AND kind = 'mark'",
    "nvtx_domains": "SELECT COUNT(*) FROM nvtx_ranges WHERE run_id = :run_id "
                    "AND kind = 'domain_create'",
}
_DOMAIN_CREATE = "kind = 'domain_create'"


def upgrade() -> None:
    op.create_table(
        'run_counts',
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=32), nullable=False),
        sa.Column('count', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'],
                                name=op.f('fk_run_counts_run_id_runs'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('run_id', 'name', name=op.f('pk_run_counts')),
    )
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('source_stat', sa.Text(), nullable=True))
    op.drop_index('ix_nvtx_ranges_run_tid', table_name='nvtx_ranges')
    op.create_index('ix_nvtx_ranges_run_id', 'nvtx_ranges', ['run_id'])
    op.create_index('ix_nvtx_ranges_domains', 'nvtx_ranges', ['run_id'],
                    sqlite_where=sa.text(_DOMAIN_CREATE),
                    postgresql_where=sa.text(_DOMAIN_CREATE))
    connection = op.get_bind()
    # Run by run: each count reads one run's rows through the run_id index.
    for (run_id,) in connection.execute(sa.text("SELECT id FROM runs ORDER BY id")).all():
        for name, count in _COUNTS.items():
            connection.execute(sa.text(
                f"INSERT INTO run_counts (run_id, name, count) SELECT :run_id, '{name}', "
                f"({count})"), {"run_id": run_id})


def downgrade() -> None:
    op.drop_index('ix_nvtx_ranges_domains', table_name='nvtx_ranges')
    op.drop_index('ix_nvtx_ranges_run_id', table_name='nvtx_ranges')
    op.create_index('ix_nvtx_ranges_run_tid', 'nvtx_ranges', ['run_id', 'global_tid', 'start_ns'])
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('source_stat')
    op.drop_table('run_counts')
