"""Kernels point at the CPU op that launched them; threads and processes keyed for lookups

``kernels.cpu_op_id`` is the link the classifier (operand types), the phase heuristics
(shapes) and the roofline (FLOPs and bytes) follow from a kernel to its framework op. It used
to be a join on ``external_id`` at analysis time, whose plan SQLite chose without statistics:
on real torch traces it scanned every kernel of the run for each CPU op. The ingest now
resolves the link once; this migration fills it for runs already stored, with one index
search per kernel (the op with that External id that was running when the kernel was
launched, where ids repeat).

Threads and processes get an index on (run, id): reports look one up per group row.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

#: Same choice as the ingest's (tracekit/ingest/trace_rows.py, ``_CPU_OP``), written out here
#: because a migration must not change when that code does.
_LAUNCH = "COALESCE(kernels.launch_start_ns, kernels.start_ns)"
_SAME_ID = "o.run_id = kernels.run_id AND o.external_id = kernels.external_id"
FILL_LINK = f"""
    UPDATE kernels SET cpu_op_id = COALESCE(
        (SELECT o.id FROM cpu_ops o
         WHERE {_SAME_ID} AND o.start_ns <= {_LAUNCH} AND o.end_ns >= {_LAUNCH}
         ORDER BY o.start_ns DESC, o.id LIMIT 1),
        (SELECT o.id FROM cpu_ops o WHERE {_SAME_ID} AND o.start_ns <= {_LAUNCH}
         ORDER BY o.start_ns DESC, o.id LIMIT 1),
        (SELECT o.id FROM cpu_ops o WHERE {_SAME_ID} ORDER BY o.start_ns, o.id LIMIT 1))
    WHERE external_id IS NOT NULL"""


def upgrade() -> None:
    op.add_column("kernels", sa.Column("cpu_op_id", sa.BigInteger(), nullable=True))
    op.create_index("ix_threads_run_tid", "threads", ["run_id", "global_tid"])
    op.create_index("ix_processes_run_pid", "processes", ["run_id", "global_pid"])
    op.execute(sa.text(FILL_LINK))


def downgrade() -> None:
    op.drop_index("ix_processes_run_pid", table_name="processes")
    op.drop_index("ix_threads_run_tid", table_name="threads")
    with op.batch_alter_table("kernels") as batch:
        batch.drop_column("cpu_op_id")
