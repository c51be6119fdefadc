"""timed mock interviews

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mockinterview",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("minutes", sa.Integer(), nullable=False),
        sa.Column("topics", sa.JSON(), nullable=False),
        sa.Column("difficulty", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True),
        sa.Column("with_challenge", sa.Boolean(), nullable=False),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("deadline", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("ended_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("ended_by", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True),
        sa.Column("scored_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("share_token", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("mockinterview", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mockinterview_user_id"), ["user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_mockinterview_started_at"), ["started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_mockinterview_share_token"), ["share_token"], unique=True)

    op.create_table(
        "mockitem",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("interview_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("card_id", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=True),
        sa.Column("challenge", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("follow_up_answer", sa.Text(), nullable=True),
        sa.Column("response", sa.JSON(), nullable=True),
        sa.Column("correct", sa.Boolean(), nullable=True),
        sa.Column("asked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("answered_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("done_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("covered", sa.JSON(), nullable=True),
        sa.Column("follow_up_covered", sa.Boolean(), nullable=True),
        sa.Column("rating", sa.Integer(), nullable=True),
        sa.Column("due_after", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["card_id"], ["card.id"]),
        sa.ForeignKeyConstraint(["interview_id"], ["mockinterview.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("interview_id", "position"),
    )
    with op.batch_alter_table("mockitem", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mockitem_interview_id"), ["interview_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_mockitem_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("mockitem", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mockitem_user_id"))
        batch_op.drop_index(batch_op.f("ix_mockitem_interview_id"))
    op.drop_table("mockitem")
    with op.batch_alter_table("mockinterview", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mockinterview_share_token"))
        batch_op.drop_index(batch_op.f("ix_mockinterview_started_at"))
        batch_op.drop_index(batch_op.f("ix_mockinterview_user_id"))
    op.drop_table("mockinterview")
