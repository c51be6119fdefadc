"""A review log of a made-up learner, long enough for fsrs's optimizer, for the personal-scheduling tests."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from fsrs import Card as FsrsCard
from fsrs import Rating, Scheduler
from sqlmodel import Session, col, select

from app.models import Card, Review

START = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def add_review_log(
    session: Session, user_id: int, *, cards: int = 100, reviews_per_card: int = 7, seed: int = 7
) -> datetime:
    """Reviews of `cards` cards, each reviewed when FSRS's defaults say it is due, by a learner who
    forgets faster than those defaults predict (recall is the predicted recall squared). Commits;
    returns the moment after the last review."""
    rng = random.Random(seed)
    scheduler = Scheduler(enable_fuzzing=False)
    ids = session.exec(select(Card.id).where(col(Card.retired).is_(False)).order_by(Card.id)).all()[:cards]
    last = START
    for number, card_id in enumerate(ids):
        card = FsrsCard(card_id=number + 1, due=START)
        moment = START + timedelta(days=rng.randint(0, 10), minutes=rng.randint(0, 600))
        for _ in range(reviews_per_card):
            recall = float(scheduler.get_card_retrievability(card, moment)) ** 2
            if rng.random() > recall:
                rating = Rating.Again
            else:
                rating = rng.choice([Rating.Hard, Rating.Good, Rating.Good, Rating.Good, Rating.Easy])
            card, _ = scheduler.review_card(card, rating, moment)
            session.add(
                Review(
                    user_id=user_id, card_id=card_id, rating=int(rating), source="recall",
                    reviewed_at=moment, due_after=card.due,
                )
            )  # fmt: skip
            last = max(last, moment)
            # The next review a day or more later: every review after the first counts.
            moment = max(card.due, moment + timedelta(days=1, minutes=rng.randint(0, 90)))
    session.commit()
    return last + timedelta(minutes=1)
