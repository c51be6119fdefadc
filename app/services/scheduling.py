"""Spaced repetition with FSRS (the `fsrs` package): reviews, due dates, due counts and mastery.

Each (user, card) pair has a CardProgress row holding fsrs.Card's fields; a review runs
fsrs.Scheduler.review_card on it and logs a Review row. The scheduler is built per user:
their retention target (or the app's), and, when they have an interview date ahead, a
maximum interval that ends before it, with enough new cards a day that every card is
shown at least once by then. Days are UTC days.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from fsrs import Card as FsrsCard
from fsrs import Rating, Scheduler, State
from sqlalchemy import func
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from app.config import Settings, get_settings
from app.models import Card, CardProgress, Review, Topic, User, utcnow
from graders.wording import plural

RATING_NAMES = {Rating.Again: "again", Rating.Hard: "hard", Rating.Good: "good", Rating.Easy: "easy"}
RATINGS_BY_NAME = {name: rating for rating, name in RATING_NAMES.items()}
# How far ahead "mastery" predicts recall when no interview date is set.
MASTERY_HORIZON = timedelta(days=7)


def parse_rating(value: str | int) -> Rating:
    """'good', 'Good' or 3 -> Rating.Good; ValueError for anything else."""
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return Rating(int(value))
    try:
        return RATINGS_BY_NAME[value.lower()]
    except KeyError:
        raise ValueError(f"unknown rating {value!r}: use again, hard, good or easy") from None


def start_of_day(moment: datetime) -> datetime:
    return datetime.combine(moment.astimezone(UTC).date(), time(), tzinfo=UTC)


def days_to_interview(user: User, now: datetime) -> int | None:
    """Whole days from today to the interview; None without one, or once it has passed."""
    if user.interview_date is None:
        return None
    days = (user.interview_date - now.astimezone(UTC).date()).days
    return days if days > 0 else None


def retention_for(user: User, settings: Settings) -> float:
    return user.desired_retention or settings.desired_retention


def scheduler_for(*, user: User, settings: Settings, now: datetime, fuzz: bool | None = None) -> Scheduler:
    """The user's FSRS scheduler: their retention target; no interval reaching past their interview."""
    maximum_interval = 36500
    days = days_to_interview(user, now)
    if days is not None:
        # A card reviewed today comes back by the day before the interview (on it, if that is tomorrow).
        maximum_interval = max(1, days - 1)
    return Scheduler(
        desired_retention=retention_for(user, settings),
        maximum_interval=maximum_interval,
        enable_fuzzing=settings.fsrs_fuzzing if fuzz is None else fuzz,
    )


def to_fsrs(progress: CardProgress | None, now: datetime) -> FsrsCard:
    if progress is None:
        return FsrsCard(card_id=1, due=now)
    return FsrsCard(
        card_id=progress.id or 1,
        state=State(progress.state),
        step=progress.step,
        stability=progress.stability,
        difficulty=progress.difficulty,
        due=progress.due,
        last_review=progress.last_review,
    )


def _store(progress: CardProgress, card: FsrsCard) -> None:
    progress.state = int(card.state)
    progress.step = card.step
    progress.stability = card.stability
    progress.difficulty = card.difficulty
    progress.due = card.due
    progress.last_review = card.last_review


def get_progress(*, session: Session, user_id: int, card_id: str) -> CardProgress | None:
    return session.exec(
        select(CardProgress).where(CardProgress.user_id == user_id, CardProgress.card_id == card_id)
    ).first()


def review_card(
    *,
    session: Session,
    user: User,
    card_id: str,
    rating: Rating,
    source: str,
    settings: Settings,
    now: datetime | None = None,
    quiz_item_id: int | None = None,
) -> CardProgress:
    """Rate one card: FSRS moves its due date; the review is logged. The caller commits."""
    now = now or utcnow()
    assert user.id is not None
    progress = get_progress(session=session, user_id=user.id, card_id=card_id)
    if progress is None:
        progress = CardProgress(user_id=user.id, card_id=card_id, due=now)
        session.add(progress)
    was_review = progress.state == int(State.Review)
    card, _log = scheduler_for(user=user, settings=settings, now=now).review_card(
        to_fsrs(progress, now), rating, review_datetime=now
    )
    _store(progress, card)
    progress.reps += 1
    if rating == Rating.Again and was_review:
        progress.lapses += 1
    session.add(
        Review(
            user_id=user.id,
            card_id=card_id,
            rating=int(rating),
            source=source,
            reviewed_at=now,
            due_after=card.due,
            quiz_item_id=quiz_item_id,
        )
    )
    session.flush()
    return progress


def preview(
    *, progress: CardProgress | None, user: User, settings: Settings, now: datetime
) -> dict[str, datetime]:
    """rating name -> the due date that rating would give (without fuzz), for the rating buttons."""
    scheduler = scheduler_for(user=user, settings=settings, now=now, fuzz=False)
    card = to_fsrs(progress, now)
    return {
        name: scheduler.review_card(card, rating, review_datetime=now)[0].due
        for rating, name in RATING_NAMES.items()
    }


def humanize_interval(due: datetime, now: datetime) -> str:
    """'now' (due already), '1 min' (never less), '10 min', '3 h', '4 days', '1 month', '1.2 years'."""
    seconds = (due - now).total_seconds()
    if seconds <= 0:
        return "now"
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h"
    days = seconds / 86400
    if days < 31:
        return plural(round(days), "day")
    if days < 365:
        return plural(round(days / 30.4, 1), "month")  # "1 month", not "1.0 months"
    return plural(round(days / 365, 1), "year")


# --- due counts and the due queue -----------------------------------------------------------------


@dataclass(frozen=True)
class DueCounts:
    due_now: int  # seen cards due now (and cards a failed challenge brought forward)
    due_today: int  # seen cards due before the end of today
    due_week: int  # seen cards due within 7 days
    new_today: int  # unseen cards to introduce today
    unseen: int  # cards never reviewed
    interview_days: int | None

    @property
    def today(self) -> int:
        """What the home page calls "due today": reviews due today plus today's new cards."""
        return self.due_today + self.new_today


def _live_cards(topics: Sequence[str] | None = None, difficulty: str | None = None) -> SelectOfScalar[Card]:
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
    cards = {c.id: c for c in session.exec(_live_cards(topics, difficulty)).all()}
    progress = session.exec(select(CardProgress).where(CardProgress.user_id == user.id)).all()
    seen = {p.card_id for p in progress}
    due = [
        cards[p.card_id] for p in sorted(progress, key=lambda p: p.due) if p.due <= now and p.card_id in cards
    ]
    counts = due_counts(session=session, user=user, settings=settings, now=now)
    fresh = study_order((c for c in cards.values() if c.id not in seen), topic_positions(session=session))
    return due + fresh[: counts.new_today]


# --- mastery ---------------------------------------------------------------------------------------


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
    by_topic: dict[str, list[Card]] = {}
    for card in session.exec(_live_cards()).all():
        by_topic.setdefault(card.topic, []).append(card)
    result = []
    for topic in session.exec(select(Topic).order_by(col(Topic.position))).all():
        cards = by_topic.get(topic.slug, [])
        mine = [progress[c.id] for c in cards if c.id in progress]
        held = [card_mastery(progress=p, scheduler=scheduler, now=now, horizon_days=horizon) for p in mine]
        result.append(
            TopicMastery(
                slug=topic.slug,
                title=topic.title,
                cards=len(cards),
                seen=sum(1 for p in mine if p.reps > 0),
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


# --- coding challenges -----------------------------------------------------------------------------


def record_challenge_result(
    *,
    session: Session,
    user_id: int,
    slug: str,
    passed: bool,
    topics: Sequence[str],
    now: datetime | None = None,
    settings: Settings | None = None,
) -> int:
    """A graded challenge counts toward its concept cards (the cards of the challenge's topics).

    Passed: a Good review of each card. Failed: each card is brought forward to due now (an
    unseen card becomes due now too). Commits; returns how many cards it touched. Safe to call
    from a grading worker with its own session; an unknown user is ignored.
    """
    now = now or utcnow()
    settings = settings or get_settings()
    user = session.get(User, user_id)
    if user is None or not topics:
        return 0
    cards = session.exec(_live_cards(list(topics))).all()
    for card in cards:
        if passed:
            review_card(
                session=session, user=user, card_id=card.id, rating=Rating.Good, source="challenge",
                settings=settings, now=now,
            )  # fmt: skip
            continue
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
