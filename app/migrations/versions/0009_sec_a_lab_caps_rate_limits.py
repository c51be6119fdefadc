"""the client address of a lab run (per-address caps) and rate-limit counts kept in the database

Revision ID: 0009_sec_a
Revises: 0008
Create Date: 2026-12-01 21:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0009_sec_a"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: runs started before the column existed count for no address.
    with op.batch_alter_table("labrun", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("client_address", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )
        batch_op.create_index(batch_op.f("ix_labrun_client_address"), ["client_address"], unique=False)
    op.create_table(
        "rate_limit_hit",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=250), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("expires", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("rate_limit_hit", schema=None) as batch_op:
        batch_op.create_index("ix_rate_limit_hit_key_at", ["key", "at"], unique=False)
        batch_op.create_index(batch_op.f("ix_rate_limit_hit_expires"), ["expires"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("rate_limit_hit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rate_limit_hit_expires"))
        batch_op.drop_index("ix_rate_limit_hit_key_at")
    op.drop_table("rate_limit_hit")
    with op.batch_alter_table("labrun", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_labrun_client_address"))
        batch_op.drop_column("client_address")
