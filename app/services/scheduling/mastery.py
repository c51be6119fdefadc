"""Mastery: how well each card, and each topic, is held over the span that matters to the user."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from fsrs import Scheduler
from sqlmodel import Session, col, select

from app.config import Settings
from app.models import Card, CardProgress, Topic, User, utcnow
from app.services.scheduling.scheduler import days_to_interview, scheduler_for, to_fsrs

# How far ahead "mastery" predicts recall when no interview date is set.
MASTERY_HORIZON = timedelta(days=7)


@dataclass(frozen=True)
class TopicMastery:
    slug: str
    title: str
    cards: int
    seen: int
    due: int
    mastery: float  # 0..1: mean card_mastery over the topic's cards, unseen cards counting 0

    @property
    def percent(self) -> int:
        return round(self.mastery * 100)


def mastery_horizon_days(user: User, now: datetime) -> float:
    """The span a card should hold for: up to the interview, else a week."""
    days = days_to_interview(user, now)
    return float(days) if days is not None else MASTERY_HORIZON.days


def card_mastery(
    *, progress: CardProgress | None, scheduler: Scheduler, now: datetime, horizon_days: float
) -> float:
    """0..1: how well a card is held. FSRS's stability S is the number of days recall stays above 90%;
    S / (S + horizon) is 0.5 when the card holds for the whole horizon, and today's predicted recall
    scales it down when the card is overdue. An unseen card is 0."""
    if progress is None or progress.reps == 0 or not progress.stability:
        return 0.0
    recall = float(scheduler.get_card_retrievability(to_fsrs(progress, now), current_datetime=now))
    return recall * progress.stability / (progress.stability + horizon_days)


def mastery_by_topic(
    *, session: Session, user: User, settings: Settings, now: datetime | None = None
) -> list[TopicMastery]:
    now = now or utcnow()
    assert user.id is not None
    scheduler = scheduler_for(user=user, settings=settings, now=now, fuzz=False)
    horizon = mastery_horizon_days(user, now)
    progress = {
        p.card_id: p for p in session.exec(select(CardProgress).where(CardProgress.user_id == user.id))
    }
    # Ids and topics only: a whole Card row decodes its JSON content, which no count here reads.
    by_topic: dict[str, list[str]] = {}
    for card_id, card_topic in session.exec(select(Card.id, Card.topic).where(col(Card.retired).is_(False))):
        by_topic.setdefault(card_topic, []).append(card_id)
    result = []
    for topic in session.exec(select(Topic).order_by(col(Topic.position))).all():
        cards = by_topic.get(topic.slug, [])
        mine = [progress[card_id] for card_id in cards if card_id in progress]
        held = [card_mastery(progress=p, scheduler=scheduler, now=now, horizon_days=horizon) for p in mine]
        result.append(
            TopicMastery(
                slug=topic.slug,
                title=topic.title,
                cards=len(cards),
                # Seen as on every page (app/services/card_status.py): a progress row, from a review
                # or a failed challenge that brought the card forward; so seen + new = cards, due <= seen.
                seen=len(mine),
                due=sum(1 for p in mine if p.due <= now),
                mastery=sum(held) / len(cards) if cards else 0.0,
            )
        )
    return result


def weakest_topics(*, session: Session, user: User, settings: Settings, now: datetime) -> list[str]:
    """Topics by mastery, weakest first: topics already studied come before untouched ones."""
    mastery = [m for m in mastery_by_topic(session=session, user=user, settings=settings, now=now) if m.cards]
    studied = sorted((m for m in mastery if m.seen), key=lambda m: m.mastery)
    untouched = [m for m in mastery if not m.seen]
    return [m.slug for m in studied + untouched]
