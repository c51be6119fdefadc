"""Search ranks cards by relevance in the database's own full-text search, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import text
from sqlmodel import Session, col, select

from app.models import Card
from app.services.card_search import indexed_count
from app.services.cards import CardFilter, list_cards, neighbours, search_terms
from app.services.content_sync import sync_bank
from tests.services.factories import catalog


def _ids(db: Session, q: str, page_size: int = 100) -> list[str]:
    return [c.id for c in list_cards(session=db, filters=CardFilter(q=q), page_size=page_size)[0]]


def _live(db: Session) -> list[Card]:
    return list(db.exec(select(Card).where(col(Card.retired).is_(False))).all())


def _titled(db: Session, *words: str) -> set[str]:
    """Cards whose title holds one of `words` (case-insensitive)."""
    return {c.id for c in _live(db) if any(w in c.title.lower() for w in words)}


def test_rope_lists_the_rope_cards_first(db: Session) -> None:
    found = _ids(db, "rope")
    rope_titled = _titled(db, "rope")
    assert len(rope_titled) >= 4
    # Every card with RoPE in its title comes before every card that only mentions it.
    assert set(found[: len(rope_titled)]) == rope_titled, found[:8]
    assert found[0] in {"how-rope-works", "rope-frequencies-and-theta"}, found[:5]


def test_paged_attention_puts_pagedattention_cards_in_the_top_three(db: Session) -> None:
    found = _ids(db, "paged attention")
    # The two cards named for it, and a third that asks about PagedAttention in its question
    # (vAttention's card weighs itself against it) before any card that only says "pages".
    assert {"what-pagedattention-solves", "paged-attention-kernel"} <= set(found[:3]), found[:8]
    asks = {c.id for c in _live(db) if "paged" in (c.title + c.data["question"]).lower()}
    assert set(found[:3]) <= asks, found[:8]


def test_ranking_filters_nothing_out_and_pages_keep_it(db: Session) -> None:
    """The ranking orders the cards the substring filter finds; pages are slices of that order."""
    for q in ("rope", "paged attention", "kv_cache", "quant"):
        everything = _ids(db, q)
        words = search_terms(q)
        assert sorted(everything) == sorted(c.id for c in _live(db) if all(w in c.search_text for w in words))
        pages = [_ids(db, q, page_size=3)]
        rows, total = list_cards(session=db, filters=CardFilter(q=q), page=2, page_size=3)
        pages.append([c.id for c in rows])
        assert total == len(everything)
        assert pages[0] + pages[1] == everything[:6]
    # A card's Previous/Next walks the same ranked list.
    ranked = _ids(db, "rope")
    here = neighbours(session=db, filters=CardFilter(q="rope"), card_id=ranked[1])
    assert here is not None and here.position == 2
    assert here.previous and here.previous[0] == ranked[0] and here.next and here.next[0] == ranked[2]


def test_query_syntax_is_only_words(db: Session) -> None:
    for q in ('"', "rope OR", "a* NEAR(b)", "':* | !", "NOT", "-", "kv_cache'); DROP"):
        list_cards(session=db, filters=CardFilter(q=q))  # no syntax error reaches the user


def test_sync_keeps_the_index_to_the_bank(db: Session) -> None:
    bank = catalog().bank
    assert indexed_count(session=db) == len(bank.cards)
    # An index that lost its rows is rebuilt by the next sync, though no card changed.
    db.execute(text("DELETE FROM card_search"))
    db.commit()
    assert _ids(db, "rope")[0] not in _titled(db, "rope")  # unranked: study order
    report = sync_bank(session=db, bank=bank)
    assert report.added == report.updated == report.retired == 0
    assert indexed_count(session=db) == len(bank.cards)
    assert _ids(db, "rope")[0] in _titled(db, "rope")
