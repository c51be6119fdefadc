"""the key points the matcher suggested for a quiz recall answer and a mock answer

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 12:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: answers given before these columns existed simply have no suggestion.
    for table in ("quizitem", "mockitem"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("suggested", sa.JSON(), nullable=True))


def downgrade() -> None:
    for table in ("mockitem", "quizitem"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("suggested")
