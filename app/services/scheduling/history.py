"""What else feeds the schedule and the history: graded challenges, reviews per day and the streak."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

from fsrs import Rating
from sqlmodel import Session, select

from app.config import Settings
from app.models import CardProgress, Review, User, utcnow
from app.services.scheduling.due import live_cards
from app.services.scheduling.scheduler import get_progress, review_cards


def record_challenge_result(
    *,
    session: Session,
    user_id: int,
    slug: str,
    passed: bool,
    topics: Sequence[str],
    settings: Settings,
    now: datetime | None = None,
) -> int:
    """A graded challenge counts toward its concept cards (the cards of the challenge's topics).

    Passed: a Good review of each card. Failed: each card is brought forward to due now (an
    unseen card becomes due now too). Commits; returns how many cards it touched. Safe to call
    from a grading worker with its own session; an unknown user is ignored.
    """
    now = now or utcnow()
    user = session.get(User, user_id)
    if user is None or not topics:
        return 0
    cards = session.exec(live_cards(list(topics))).all()
    if passed:
        review_cards(
            session=session,
            user=user,
            card_ids=[card.id for card in cards],
            rating=Rating.Good,
            source="challenge",
            settings=settings,
            now=now,
        )
        session.commit()
        return len(cards)
    for card in cards:
        progress = get_progress(session=session, user_id=user_id, card_id=card.id)
        if progress is None:
            session.add(CardProgress(user_id=user_id, card_id=card.id, due=now))
        elif progress.due > now:
            progress.due = now
            session.add(progress)
    session.commit()
    return len(cards)


def review_days(*, session: Session, user_id: int, since: datetime) -> dict[date, int]:
    """Reviews per UTC day since a moment (for the heatmap and the streak)."""
    counts: dict[date, int] = {}
    for moment in session.exec(
        select(Review.reviewed_at).where(Review.user_id == user_id, Review.reviewed_at >= since)
    ).all():
        day = moment.astimezone(UTC).date()
        counts[day] = counts.get(day, 0) + 1
    return counts


def streak(days: dict[date, int], today: date) -> int:
    """Consecutive days with a review, ending today (or yesterday, if today has none yet)."""
    day = today if days.get(today) else today - timedelta(days=1)
    n = 0
    while days.get(day):
        n += 1
        day -= timedelta(days=1)
    return n
