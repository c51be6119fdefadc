"""grading leases on submissions

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 10:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submission", schema=None) as batch_op:
        owner = sa.Column("lease_owner", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True)
        batch_op.add_column(owner)
        batch_op.add_column(sa.Column("lease_expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        index = batch_op.f("ix_submission_lease_expires_at")
        batch_op.create_index(index, ["lease_expires_at"], unique=False)
    # Rows left by an older version: queued or running ones get a lease that has run out, so the
    # first reaper queues them again.
    op.execute("UPDATE submission SET lease_expires_at = created_at WHERE status IN ('queued', 'running')")


def downgrade() -> None:
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_submission_lease_expires_at"))
        batch_op.drop_column("attempts")
        batch_op.drop_column("lease_expires_at")
        batch_op.drop_column("lease_owner")
