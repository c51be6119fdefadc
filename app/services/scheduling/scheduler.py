"""The FSRS scheduler of one user, and one review of one card through it.

Each (user, card) pair has a CardProgress row holding fsrs.Card's fields; a review runs
fsrs.Scheduler.review_card on it and logs a Review row. The scheduler is built per user:
their retention target (or the app's), and, when they have an interview date ahead, a
maximum interval that ends before it, with enough new cards a day that every card is
shown at least once by then. Days are UTC days.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, time
from typing import Any

from fsrs import Card as FsrsCard
from fsrs import Rating, Scheduler, State
from fsrs.scheduler import DEFAULT_PARAMETERS, FUZZ_RANGES
from sqlmodel import Session, col, select

from app.config import Settings
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


def scheduler_for(*, user: User, settings: Settings, now: datetime, fuzz: bool | None = None) -> Scheduler:
    """The user's FSRS scheduler: their parameters and retention target; no interval past their interview."""
    maximum_interval = 36500
    days = days_to_interview(user, now)
    if days is not None:
        # A card reviewed today comes back by the day before the interview (on it, if that is tomorrow).
        maximum_interval = max(1, days - 1)
    return Scheduler(
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
                source=source,
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
    *, progress: CardProgress | None, user: User, settings: Settings, now: datetime
) -> dict[str, datetime]:
    """rating name -> the due date that rating would give (without fuzz), for the rating buttons."""
    scheduler = scheduler_for(user=user, settings=settings, now=now, fuzz=False)
    card = to_fsrs(progress, now)
    return {
        name: scheduler.review_card(card, rating, review_datetime=now)[0].due
        for rating, name in RATING_NAMES.items()
    }


def fuzz_range_days(interval_days: int, maximum_interval: int) -> tuple[int, int] | None:
    """The days a fuzzed review may land on, for an interval of `interval_days` before fuzz.

    fsrs spreads an interval of 3 days or more over a range that widens with it (its FUZZ_RANGES:
    15% of the part between 2.5 and 7 days, 10% up to 20, 5% beyond, plus a day); None where no
    fuzz applies. The rating buttons show this range, so "8 days" never turns out to be 10."""
    if interval_days < 2.5:
        return None
    delta = 1.0 + sum(
        r["factor"] * max(min(float(interval_days), r["end"]) - r["start"], 0.0) for r in FUZZ_RANGES
    )
    high = min(round(interval_days + delta), maximum_interval)
    low = min(max(2, round(interval_days - delta)), high)
    # fsrs draws uniformly in [low, high + 1) and rounds, so high + 1 is reachable too.
    return low, min(high + 1, maximum_interval)


def preview_text(
    *, progress: CardProgress | None, user: User, settings: Settings, now: datetime
) -> dict[str, str]:
    """rating name -> what the button says: '10 min', '1 day', or '7-10 days' where fuzz spreads it."""
    scheduler = scheduler_for(user=user, settings=settings, now=now, fuzz=False)
    out: dict[str, str] = {}
    for name, due in preview(progress=progress, user=user, settings=settings, now=now).items():
        spread = (
            fuzz_range_days((due - now).days, scheduler.maximum_interval) if settings.fsrs_fuzzing else None
        )
        if spread is None or spread[0] == spread[1]:
            out[name] = humanize_interval(due, now)
        elif spread[1] < 31:
            out[name] = f"{spread[0]}-{spread[1]} days"
        else:
            out[name] = f"about {humanize_interval(due, now)}"
    return out


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
