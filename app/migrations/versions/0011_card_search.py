"""the cards' full-text index: an FTS5 table on SQLite, a tsvector per card on PostgreSQL

Revision ID: 0011_card_search
Revises: 0010_api_tokens
Create Date: 2026-12-02 17:10:00.000000

Filled by the bank's sync (app/services/content_sync.py), which rebuilds it at the next start
when its row count differs from the bank's; app/services/card_search.py reads and writes it.
"""

from __future__ import annotations

from alembic import op

revision = "0011_card_search"
down_revision = "0010_api_tokens"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE TABLE card_search (card_id VARCHAR(80) PRIMARY KEY, document TSVECTOR NOT NULL)")
        op.execute("CREATE INDEX ix_card_search_document ON card_search USING gin (document)")
    else:
        # No stemmer, as PostgreSQL's 'simple' configuration: a query word finds the words it begins.
        op.execute(
            "CREATE VIRTUAL TABLE card_search USING fts5("
            "card_id UNINDEXED, title, question, answer, tokenize = 'unicode61')"
        )


def downgrade() -> None:
    op.execute("DROP TABLE card_search")
