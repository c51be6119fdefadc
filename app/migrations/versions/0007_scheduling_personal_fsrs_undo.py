"""personal FSRS parameters, their fit jobs, undo snapshots and repeated quiz items

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 12:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fsrs_parameters", sa.JSON(), nullable=True))
    with op.batch_alter_table("review", schema=None) as batch_op:
        batch_op.add_column(sa.Column("before", sa.JSON(), nullable=True))
    with op.batch_alter_table("quizitem", schema=None) as batch_op:
        batch_op.add_column(sa.Column("repeat_of", sa.Integer(), nullable=True))
        batch_op.create_foreign_key("fk_quizitem_repeat_of_quizitem", "quizitem", ["repeat_of"], ["id"])
    op.create_table(
        "fsrsfit",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("reviews", sa.Integer(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("fsrsfit", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_fsrsfit_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_fsrsfit_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("fsrsfit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_fsrsfit_user_id"))
        batch_op.drop_index(batch_op.f("ix_fsrsfit_created_at"))
    op.drop_table("fsrsfit")
    with op.batch_alter_table("quizitem", schema=None) as batch_op:
        batch_op.drop_constraint("fk_quizitem_repeat_of_quizitem", type_="foreignkey")
        batch_op.drop_column("repeat_of")
    with op.batch_alter_table("review", schema=None) as batch_op:
        batch_op.drop_column("before")
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.drop_column("fsrs_parameters")
