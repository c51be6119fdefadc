"""Due counts and the due queue: what a user has to review now, today and this week. Days are UTC days."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from app.config import Settings
from app.models import Card, CardProgress, Review, Topic, User, utcnow
from app.services.scheduling.scheduler import days_to_interview, retention_for, start_of_day


@dataclass(frozen=True)
class DueCounts:
    # Seen, new and due as app/services/card_status.py defines them, for every page's counts.
    due_now: int  # seen cards due now (a failed challenge's cards among them)
    due_today: int  # seen cards due before the end of today
    due_week: int  # seen cards due within 7 days
    new_today: int  # new cards to introduce today
    unseen: int  # new cards: no review and no challenge result yet
    interview_days: int | None
    # What sets these counts, shown beside them: the retention target, the interview date, and
    # whether the FSRS parameters are fitted to this user (app/services/personal_fsrs.py).
    retention: float = 0.9
    interview_date: date | None = None
    personal: bool = False

    @property
    def today(self) -> int:
        """What the home page calls "due today": reviews due today plus today's new cards."""
        return self.due_today + self.new_today


def live_cards(topics: Sequence[str] | None = None, difficulty: str | None = None) -> SelectOfScalar[Card]:
    query = select(Card).where(col(Card.retired).is_(False))
    if topics:
        query = query.where(col(Card.topic).in_(list(topics)))
    if difficulty:
        query = query.where(Card.difficulty == difficulty)
    return query


def introduced_today(*, session: Session, user_id: int, now: datetime) -> int:
    """Cards whose first review happened today."""
    first = (
        select(Review.card_id, func.min(Review.reviewed_at).label("first"))
        .where(Review.user_id == user_id)
        .group_by(col(Review.card_id))
        .subquery()
    )
    count = session.exec(
        select(func.count()).select_from(first).where(first.c.first >= start_of_day(now))
    ).one()
    return int(count)


def new_card_quota(*, user: User, settings: Settings, unseen: int, introduced: int, now: datetime) -> int:
    """New cards still to show today: the daily allowance, or more when an interview needs them."""
    per_day = settings.new_cards_per_day
    days = days_to_interview(user, now)
    if days is not None:
        # Spread what is left (including today's) over the days up to the interview, today included.
        per_day = max(per_day, math.ceil((unseen + introduced) / days))
    return max(0, min(unseen, per_day - introduced))


def due_counts(*, session: Session, user: User, settings: Settings, now: datetime | None = None) -> DueCounts:
    now = now or utcnow()
    assert user.id is not None
    live = select(Card.id).where(col(Card.retired).is_(False))
    rows = session.exec(
        select(CardProgress.due).where(CardProgress.user_id == user.id, col(CardProgress.card_id).in_(live))
    ).all()
    end_of_day = start_of_day(now) + timedelta(days=1)
    total = int(session.exec(select(func.count()).select_from(live.subquery())).one())
    unseen = total - len(rows)
    introduced = introduced_today(session=session, user_id=user.id, now=now)
    return DueCounts(
        due_now=sum(1 for due in rows if due <= now),
        due_today=sum(1 for due in rows if due < end_of_day),
        due_week=sum(1 for due in rows if due < now + timedelta(days=7)),
        new_today=new_card_quota(user=user, settings=settings, unseen=unseen, introduced=introduced, now=now),
        unseen=unseen,
        interview_days=days_to_interview(user, now),
        retention=retention_for(user, settings),
        interview_date=user.interview_date,
        personal=user.fsrs_parameters is not None,
    )


def study_order(cards: Iterable[Card], positions: dict[str, int]) -> list[Card]:
    rank = {"easy": 0, "medium": 1, "hard": 2}
    return sorted(cards, key=lambda c: (positions.get(c.topic, 999), rank.get(c.difficulty, 3), c.title))


def topic_positions(*, session: Session) -> dict[str, int]:
    return {t.slug: t.position for t in session.exec(select(Topic)).all()}


def due_queue(
    *,
    session: Session,
    user: User,
    settings: Settings,
    now: datetime,
    topics: Sequence[str] | None = None,
    difficulty: str | None = None,
) -> list[Card]:
    """Cards due now (most overdue first), then today's new cards in study order."""
    assert user.id is not None
    cards = {c.id: c for c in session.exec(live_cards(topics, difficulty)).all()}
    progress = session.exec(select(CardProgress).where(CardProgress.user_id == user.id)).all()
    seen = {p.card_id for p in progress}
    due = [
        cards[p.card_id] for p in sorted(progress, key=lambda p: p.due) if p.due <= now and p.card_id in cards
    ]
    counts = due_counts(session=session, user=user, settings=settings, now=now)
    fresh = study_order((c for c in cards.values() if c.id not in seen), topic_positions(session=session))
    return due + fresh[: counts.new_today]
