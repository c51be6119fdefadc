"""lab runs

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "labrun",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("size", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("experiments", sa.JSON(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("message", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("heartbeat_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("labrun", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_labrun_user_id"), ["user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_labrun_created_at"), ["created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("labrun", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_labrun_created_at"))
        batch_op.drop_index(batch_op.f("ix_labrun_user_id"))
    op.drop_table("labrun")
