"""The run's GPU decided once: runs.arch, runs.gpu_model, runs.gpu_model_reason

The run's architecture was decided three times (for the classifier, for the findings, for
the roofline), with different precedence. The analysis now decides it once
(``tracekit.run_gpu``) and stores it; the stages read the stored decision. This migration
fills the columns for the runs already stored, from their devices (whose archs earlier
analyses already put in the capability table's spelling) or, for runs without devices, from
the ``NAME (ARCH)`` an earlier ``--gpu`` left in ``runs.gpu``.

Unlike earlier migrations this one calls tracekit code: which product a device is can only
be read from the product patterns of rules/_gpus.toml (``tracekit.gpus.match_gpu_model``),
and the rule that combines devices into one decision is ``tracekit.run_gpu.decide_run_gpu``
on the rows read here. A later analysis of the run writes the same columns again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('arch', sa.String(length=16), nullable=True))
        batch.add_column(sa.Column('gpu_model', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('gpu_model_reason', sa.Text(), nullable=True))
    from tracekit.run_gpu import decide_run_gpu, label_gpu, read_devices

    connection = op.get_bind()
    runs = connection.execute(sa.text("SELECT id, gpu FROM runs ORDER BY id")).all()
    for run_id, label in runs:
        decided = decide_run_gpu(read_devices(connection, run_id), earlier=label_gpu(label))
        connection.execute(sa.text(
            "UPDATE runs SET arch = :arch, gpu_model = :model, gpu_model_reason = :reason "
            "WHERE id = :run_id"),
            {"arch": decided.arch, "model": decided.model.model.key if decided.model.model
             else None, "reason": decided.model.reason, "run_id": run_id})


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('gpu_model_reason')
        batch.drop_column('gpu_model')
        batch.drop_column('arch')
