"""The FSRS scheduler of one user, and one review of one card through it.

Each (user, card) pair has a CardProgress row holding fsrs.Card's fields; a review runs
fsrs.Scheduler.review_card on it and logs a Review row. The scheduler is built per user:
their retention target (or the app's), and, when they have an interview date ahead, a
maximum interval that ends before it, with enough new cards a day that every card is
shown at least once by then. Days are UTC days.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Any

from fsrs import Card as FsrsCard
from fsrs import Rating, Scheduler, State
from fsrs.scheduler import DEFAULT_PARAMETERS, FUZZ_RANGES
from sqlmodel import Session, col, select

from app.config import Settings
from app.enums import ReviewSource
from app.models import CardProgress, Review, User, utcnow
from graders.wording import plural

RATING_NAMES = {Rating.Again: "again", Rating.Hard: "hard", Rating.Good: "good", Rating.Easy: "easy"}
RATINGS_BY_NAME = {name: rating for rating, name in RATING_NAMES.items()}


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


def parameters_for(user: User) -> tuple[float, ...]:
    """The user's own fitted FSRS parameters when they have them, else fsrs's defaults."""
    mine = user.fsrs_parameters
    if mine and len(mine) == len(DEFAULT_PARAMETERS):
        return tuple(float(p) for p in mine)
    return tuple(DEFAULT_PARAMETERS)


class SeededScheduler(Scheduler):
    """fsrs's Scheduler with its fuzz drawn from `fuzz_seed` instead of the process's `random`.

    fsrs spreads an interval of 3 days or more over a range that widens with it, so that cards
    learned together do not come due together. Drawn from a seed per (user, card, review), the
    rating buttons can show the day the review will store: the preview and the review draw alike.
    The range is fsrs's own (Scheduler._get_fuzzed_interval, fsrs 6): 15% of the part of the
    interval between 2.5 and 7 days, 10% up to 20, 5% beyond, plus a day either side.
    """

    fuzz_seed: str = ""

    def _get_fuzzed_interval(self, *, interval: timedelta) -> timedelta:
        interval_days = interval.days
        if interval_days < 2.5:
            return interval
        delta = 1.0 + sum(
            r["factor"] * max(min(float(interval_days), r["end"]) - r["start"], 0.0) for r in FUZZ_RANGES
        )
        high = min(round(interval_days + delta), self.maximum_interval)
        low = min(max(2, round(interval_days - delta)), high)
        draw = random.Random(self.fuzz_seed).random()
        return timedelta(days=min(round(draw * (high - low + 1) + low), self.maximum_interval))


def fuzz_seed(user: User, card_id: str, progress: CardProgress | None) -> str:
    """One seed per user, card and review (the card's review count): a preview shown before a
    review and the review itself draw the same fuzz; the next review draws afresh."""
    reps = 0 if progress is None else progress.reps
    return hashlib.sha256(f"{user.id}:{card_id}:{reps}".encode()).hexdigest()


def scheduler_for(
    *, user: User, settings: Settings, now: datetime, fuzz: bool | None = None
) -> SeededScheduler:
    """The user's FSRS scheduler: their parameters and retention target; no interval past their interview."""
    maximum_interval = 36500
    days = days_to_interview(user, now)
    if days is not None:
        # A card reviewed today comes back by the day before the interview (on it, if that is tomorrow).
        maximum_interval = max(1, days - 1)
    return SeededScheduler(
        parameters=parameters_for(user),
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


# The CardProgress fields a review changes: what an undo has to put back.
PROGRESS_FIELDS = ("state", "step", "stability", "difficulty", "due", "last_review", "reps", "lapses")
_MOMENTS = ("due", "last_review")


def progress_snapshot(progress: CardProgress) -> dict[str, Any]:
    """Those fields as JSON. Floats survive JSON exactly (repr is the shortest string that reads
    back as the same double); datetimes as ISO strings with their microseconds and offset."""
    out: dict[str, Any] = {}
    for name in PROGRESS_FIELDS:
        value = getattr(progress, name)
        out[name] = value.isoformat() if name in _MOMENTS and value is not None else value
    return out


def restore_progress(progress: CardProgress, snapshot: dict[str, Any]) -> None:
    """Put a progress_snapshot back onto the row, field for field."""
    for name in PROGRESS_FIELDS:
        value = snapshot[name]
        if name in _MOMENTS and value is not None:
            value = datetime.fromisoformat(value)
        setattr(progress, name, value)


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
    return review_cards(
        session=session,
        user=user,
        card_ids=[card_id],
        rating=rating,
        source=source,
        settings=settings,
        now=now,
        quiz_item_id=quiz_item_id,
    )[0]


def review_cards(
    *,
    session: Session,
    user: User,
    card_ids: Sequence[str],
    rating: Rating,
    source: str,
    settings: Settings,
    now: datetime | None = None,
    quiz_item_id: int | None = None,
) -> list[CardProgress]:
    """Rate several cards alike (a graded challenge's concept cards): one query for their progress
    rows and one flush for all, since this runs inside the verdict's transaction and a verdict waits
    for it. Each card gets its own review row with the snapshot an undo needs. The caller commits."""
    now = now or utcnow()
    assert user.id is not None
    rows = session.exec(
        select(CardProgress).where(
            CardProgress.user_id == user.id, col(CardProgress.card_id).in_(list(card_ids))
        )
    ).all()
    found = {row.card_id: row for row in rows}
    scheduler = scheduler_for(user=user, settings=settings, now=now)
    out = []
    for card_id in card_ids:
        progress = found.get(card_id)
        before = None if progress is None else progress_snapshot(progress)
        if progress is None:
            progress = CardProgress(user_id=user.id, card_id=card_id, due=now)
        was_review = progress.state == int(State.Review)
        scheduler.fuzz_seed = fuzz_seed(user, card_id, progress)
        card, _log = scheduler.review_card(to_fsrs(progress, now), rating, review_datetime=now)
        _store(progress, card)
        progress.reps += 1
        if rating == Rating.Again and was_review:
            progress.lapses += 1
        session.add(progress)
        session.add(
            Review(
                user_id=user.id,
                card_id=card_id,
                rating=int(rating),
                source=ReviewSource(source),
                reviewed_at=now,
                due_after=card.due,
                quiz_item_id=quiz_item_id,
                before=before,
            )
        )
        out.append(progress)
    session.flush()
    return out


def preview(
    *, progress: CardProgress | None, card_id: str, user: User, settings: Settings, now: datetime
) -> dict[str, datetime]:
    """rating name -> the due date that rating would give now: the one review_cards stores."""
    scheduler = scheduler_for(user=user, settings=settings, now=now)
    scheduler.fuzz_seed = fuzz_seed(user, card_id, progress)
    card = to_fsrs(progress, now)
    return {
        name: scheduler.review_card(card, rating, review_datetime=now)[0].due
        for rating, name in RATING_NAMES.items()
    }


def preview_text(
    *, progress: CardProgress | None, card_id: str, user: User, settings: Settings, now: datetime
) -> dict[str, str]:
    """rating name -> what the button says ('10 min', '1 day', '9 days'): the interval the review
    will store, fuzz included (the fuzz is drawn from the card's seed, as the review draws it)."""
    due_by_rating = preview(progress=progress, card_id=card_id, user=user, settings=settings, now=now)
    return {name: humanize_interval(due, now) for name, due in due_by_rating.items()}


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
