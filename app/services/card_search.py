"""The cards' full-text index and a search's relevance, in the database's own full-text search.

SQLite keeps an FTS5 table (`card_search`: card_id, title, question, answer) ranked by bm25;
PostgreSQL keeps one tsvector per card (title weighted A, question B, the rest D) ranked by
ts_rank. Both weigh a word in the title or question above the same word in the answer, so a
search for "rope" lists the RoPE cards before a card that mentions RoPE in a key point.

Which cards a search lists is still decided by cards._filtered (every word a substring of the
card, so "kv_cache" finds the identifier); the index only orders them. The table is written by
the bank's sync (content_sync), whole, whenever a card changed: the bank is a few hundred cards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import Float, String, bindparam, column, text
from sqlalchemy.sql.expression import Subquery
from sqlmodel import Session

from app.content.schema import Card as CardFile

# bm25's weight per FTS5 column (card_id, title, question, answer): a title word counts ten
# answer words, a question word four.
BM25_WEIGHTS = (0.0, 10.0, 4.0, 1.0)
# ts_rank's weights for the labels {D, C, B, A}: answer 0.1, (unused), question 0.4, title 1.0.
TS_RANK_WEIGHTS = "{0.1, 0.2, 0.4, 1.0}"
# A lower-case letter then a capitalised word ("PagedAttention", "vAttention"): indexed split
# too, so "attention" finds it; "RoPE" and "GQA" are left whole.
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")
_CAMEL_WORD = re.compile(r"\b\w*[a-z][A-Z][a-z]\w*\b")


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


def _with_camel_parts(text_: str) -> str:
    """`text_` and, after it, each camel-case word split into its parts."""
    parts = [_CAMEL.sub(" ", word) for word in _CAMEL_WORD.findall(text_)]
    return text_ + ("\n" + " ".join(parts) if parts else "")


def index_rows(cards: Sequence[CardFile]) -> list[dict[str, str]]:
    return [
        {
            "card_id": card.id,
            "title": _with_camel_parts(card.title),
            "question": _with_camel_parts(card.question),
            "answer": _with_camel_parts(card.answer_text()),
        }
        for card in cards
    ]


def indexed_count(*, session: Session) -> int:
    return int(session.execute(text("SELECT count(*) FROM card_search")).scalar_one())


def rebuild_index(*, session: Session, rows: Sequence[dict[str, str]]) -> None:
    """The index holds exactly these rows, index_rows(cards) (in the caller's transaction)."""
    session.execute(text("DELETE FROM card_search"))
    if not rows:
        return
    if _dialect(session) == "postgresql":
        insert = text(
            "INSERT INTO card_search (card_id, document) VALUES (:card_id, "
            "setweight(to_tsvector('simple', :title), 'A') || "
            "setweight(to_tsvector('simple', :question), 'B') || "
            "setweight(to_tsvector('simple', :answer), 'D'))"
        )
    else:
        insert = text(
            "INSERT INTO card_search (card_id, title, question, answer) "
            "VALUES (:card_id, :title, :question, :answer)"
        )
    session.execute(insert, list(rows))


def query_words(terms: Sequence[str]) -> list[str]:
    """The letters-and-digits runs of a search's terms ("kv-cache" gives "kv" and "cache"):
    the only characters put in a full-text query, so no query syntax reaches the database."""
    words: list[str] = []
    for term in terms:
        words += [w for w in re.findall(r"[^\W_]+", term) if w not in words]
    return words


def relevance(*, session: Session, terms: Sequence[str]) -> Subquery | None:
    """(card_id, score) of the cards the index finds for any of the words, higher is better.

    Each word is a prefix ("quant" finds "quantization"); a card with more of the words, or with
    them in its title, scores higher. None when the terms hold no word.
    """
    words = query_words(terms)
    if not words:
        return None
    # The words side by side, as typed, count once more: "paged attention" ranks the cards that
    # say PagedAttention above those that say "pages" in one place and "attention" in another.
    phrase = words if len(words) > 1 else []
    if _dialect(session) == "postgresql":
        tsquery = " | ".join([f"{w}:*" for w in words] + ([" <-> ".join(phrase)] if phrase else []))
        found = text(
            f"SELECT card_id, ts_rank('{TS_RANK_WEIGHTS}', document, query) AS score "
            "FROM card_search, to_tsquery('simple', :tsquery) AS query WHERE document @@ query"
        ).bindparams(bindparam("tsquery", tsquery))
    else:
        match = " OR ".join([f'"{w}"*' for w in words] + ([f'"{" ".join(phrase)}"'] if phrase else []))
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        # bm25 is lower for a better match; negated so that both backends sort descending.
        found = text(
            f"SELECT card_id, -bm25(card_search, {weights}) AS score "
            "FROM card_search WHERE card_search MATCH :match"
        ).bindparams(bindparam("match", match))
    return found.columns(column("card_id", String), column("score", Float)).subquery("relevance")
