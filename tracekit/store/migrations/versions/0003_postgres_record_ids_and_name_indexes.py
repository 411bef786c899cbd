"""PostgreSQL: 64-bit record ids, indexes under the name foreign keys

The per-record tables' ids were ``serial`` (32-bit) on PostgreSQL: a shared store would stop
accepting kernels after 2^31 of them (about 200 runs of 10^7). Their columns and sequences
become 64-bit.

Deleting a run deletes its kernel and API names, and PostgreSQL's cascade then looks for
records of each name: without an index on the referencing column that is one scan of the
whole kernels table per name (3 minutes for a 10^6-kernel run with 3,000 names). The
indexes are PostgreSQL-only (``schema.POSTGRES_ONLY_INDEXES``): on SQLite, ingest would pay
for them on every record and deletes go by run instead.

On SQLite nothing changes: ids already are the 64-bit rowid.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

RECORD_TABLES = ("kernels", "memory_ops", "runtime_calls", "nvtx_ranges", "cpu_ops",
                 "kernel_metrics", "steps")
# As schema.POSTGRES_ONLY_INDEXES was at this revision (a migration must not change later).
NAME_INDEXES = {
    "ix_kernels_name_id": ("kernels", "name_id"),
    "ix_runtime_calls_name_id": ("runtime_calls", "name_id"),
    "ix_kernel_metrics_name_id": ("kernel_metrics", "name_id"),
    "ix_kernel_groups_name_id": ("kernel_groups", "name_id"),
    "ix_classifications_name_id": ("classifications", "name_id"),
}


def _on_postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _retype(new_type: type[sa.types.TypeEngine], sequence_type: str) -> None:
    for table in RECORD_TABLES:
        op.alter_column(table, "id", type_=new_type(), existing_nullable=False)
        op.execute(sa.text(f"ALTER SEQUENCE IF EXISTS {table}_id_seq AS {sequence_type}"))


def upgrade() -> None:
    if not _on_postgres():
        return
    _retype(sa.BigInteger, "bigint")
    for name, (table, column) in NAME_INDEXES.items():
        op.create_index(name, table, [column])


def downgrade() -> None:
    if not _on_postgres():
        return
    for name, (table, _column) in NAME_INDEXES.items():
        op.drop_index(name, table_name=table)
    _retype(sa.Integer, "integer")
