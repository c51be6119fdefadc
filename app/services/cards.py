"""Queries over cards: filters, search (ranked by card_search) and paging, shared by pages and the API."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import case, func
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import Select, SelectOfScalar

from app.models import Card, CardPublic, CardSummary, Topic
from app.services.card_search import relevance

MAX_QUERY_TERMS = 8


@dataclass(frozen=True)
class CardFilter:
    topic: str | None = None
    difficulty: str | None = None
    q: str | None = None

    def key(self) -> tuple[str, str, str]:
        """The filters as a cache key's part (an empty field and a missing one are the same)."""
        return (self.topic or "", self.difficulty or "", self.q or "")


def search_terms(q: str | None) -> list[str]:
    """Lower-case words of a search query; every word must appear in the card (AND)."""
    if not q:
        return []
    return re.findall(r"[\w.+-]+", q.lower())[:MAX_QUERY_TERMS]


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# A query for whole cards, or for the (id, title) pairs a card's neighbours need.
Query = TypeVar("Query", SelectOfScalar[Card], Select[str, str])


def _filtered(query: Query, filters: CardFilter) -> Query:
    query = query.where(col(Card.retired).is_(False))
    if filters.topic:
        query = query.where(Card.topic == filters.topic)
    if filters.difficulty:
        query = query.where(Card.difficulty == filters.difficulty)
    for term in search_terms(filters.q):
        query = query.where(col(Card.search_text).like(f"%{_escape_like(term)}%", escape="\\"))
    return query


def _study_order(query: Query) -> Query:
    """Cards in study order: the topic's position, then easy before hard, then title."""
    difficulty_rank = case({"easy": 0, "medium": 1, "hard": 2}, value=Card.difficulty, else_=3)
    return query.join(Topic, col(Topic.slug) == col(Card.topic)).order_by(
        col(Topic.position), difficulty_rank, col(Card.title)
    )


def _listed_order(session: Session, query: Query, filters: CardFilter) -> Query:
    """A search's cards by relevance (the database's full-text rank), ties in study order;
    a list without a search in study order."""
    found = relevance(session=session, terms=search_terms(filters.q))
    if found is not None:
        query = query.outerjoin(found, found.c.card_id == col(Card.id)).order_by(
            func.coalesce(found.c.score, 0).desc()
        )
    return _study_order(query)


def list_cards(
    *, session: Session, filters: CardFilter, page: int = 1, page_size: int = 20
) -> tuple[list[Card], int]:
    query = _filtered(select(Card), filters)
    total = session.exec(select(func.count()).select_from(query.subquery())).one()
    ordered = _listed_order(session, query, filters)
    rows = session.exec(ordered.offset((page - 1) * page_size).limit(page_size)).all()
    return list(rows), int(total)


@dataclass(frozen=True)
class Neighbours:
    """Where a card sits in a list (the list's own order): its position and the cards either side."""

    position: int  # 1-based
    total: int
    previous: tuple[str, str] | None  # (id, title)
    next: tuple[str, str] | None

    def page(self, page_size: int) -> int:
        """The list's page that shows this card."""
        return (self.position - 1) // page_size + 1


def neighbours(*, session: Session, filters: CardFilter, card_id: str) -> Neighbours | None:
    """The card's place among the cards `filters` lists, or None when it is not one of them."""
    query = _listed_order(session, _filtered(select(Card.id, Card.title), filters), filters)
    rows = session.exec(query).all()
    ids = [row[0] for row in rows]
    if card_id not in ids:
        return None
    i = ids.index(card_id)
    return Neighbours(
        position=i + 1,
        total=len(rows),
        previous=(rows[i - 1][0], rows[i - 1][1]) if i > 0 else None,
        next=(rows[i + 1][0], rows[i + 1][1]) if i + 1 < len(rows) else None,
    )


def get_card(*, session: Session, card_id: str) -> Card | None:
    return session.get(Card, card_id)


def to_summary(card: Card) -> CardSummary:
    return CardSummary(
        id=card.id, title=card.title, topic=card.topic, difficulty=card.difficulty, tags=card.tags
    )


def to_public(card: Card) -> CardPublic:
    data = card.data
    return CardPublic(
        id=card.id,
        title=card.title,
        topic=card.topic,
        difficulty=card.difficulty,
        tags=card.tags,
        question=data["question"],
        key_points=data["key_points"],
        follow_ups=data["follow_ups"],
        wrong_answers=data["wrong_answers"],
        sources=data["sources"],
        notes=data.get("notes", ""),
        retired=card.retired,
    )


def topic_counts(*, session: Session) -> list[tuple[Topic, int]]:
    counts = dict(
        session.exec(
            select(Card.topic, func.count()).where(col(Card.retired).is_(False)).group_by(Card.topic)
        ).all()
    )
    topics = session.exec(select(Topic).order_by(col(Topic.position))).all()
    return [(t, int(counts.get(t.slug, 0))) for t in topics]


def has_topic(*, session: Session, slug: str) -> bool:
    return session.get(Topic, slug) is not None


def get_topic(*, session: Session, slug: str) -> Topic | None:
    return session.get(Topic, slug)


def ordered_topics(*, session: Session) -> list[Topic]:
    """Every topic, in the order the bank lists them."""
    return list(session.exec(select(Topic).order_by(col(Topic.position))).all())


def topic_slugs(*, session: Session) -> set[str]:
    return set(session.exec(select(Topic.slug)).all())


def cards_by_id(*, session: Session, card_ids: Sequence[str]) -> dict[str, Card]:
    """The cards of these ids (retired ones included: a past quiz still names them)."""
    return {c.id: c for c in session.exec(select(Card).where(col(Card.id).in_(card_ids))).all()}


def card_titles(*, session: Session, card_ids: Sequence[str]) -> dict[str, str]:
    return dict(session.exec(select(Card.id, Card.title).where(col(Card.id).in_(card_ids))).all())
