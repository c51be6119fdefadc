"""the user's corrections of a mock report's rubric, a JSON object by signal on each question

Revision ID: 0012_rubric_corrections
Revises: 0011_card_search
Create Date: 2026-12-02 20:05:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_rubric_corrections"
down_revision = "0011_card_search"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: a question nobody corrected has none, as every question before this column.
    with op.batch_alter_table("mockitem", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rubric_corrections", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mockitem", schema=None) as batch_op:
        batch_op.drop_column("rubric_corrections")
