"""64-bit record ids on PostgreSQL

The per-record tables' ids were ``serial`` (32-bit) on PostgreSQL: a shared store would stop
accepting kernels after 2^31 of them (about 200 runs of 10^7). Their columns and sequences
become 64-bit. On SQLite the ids already are the 64-bit rowid and nothing changes.

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


def _retype(new_type: type[sa.types.TypeEngine], sequence_type: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in RECORD_TABLES:
        op.alter_column(table, "id", type_=new_type(), existing_nullable=False)
        op.execute(sa.text(
            f"ALTER SEQUENCE IF EXISTS {table}_id_seq AS {sequence_type}"))


def upgrade() -> None:
    _retype(sa.BigInteger, "bigint")


def downgrade() -> None:
    _retype(sa.Integer, "integer")
