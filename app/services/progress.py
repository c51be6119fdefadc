"""The progress dashboard: mastery per topic, reviews per day, streak, due counts, challenges, history."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from typing import Any

from fsrs import Rating
from sqlmodel import Session, col, select

from app.config import Settings
from app.content.catalog import Catalog
from app.models import Card, Review, Submission, User, utcnow
from app.services import scheduling

HEATMAP_WEEKS = 26
HISTORY_LENGTH = 20


@dataclass(frozen=True)
class HeatCell:
    day: date
    count: int
    level: int  # 0 (none) .. 4 (many), for the colour
    future: bool


@dataclass(frozen=True)
class ChallengeStatus:
    slug: str
    title: str
    status: str  # passed | failed | not started (failed: attempted, never passed)
    attempts: int
    last_attempt: datetime | None


@dataclass(frozen=True)
class HistoryRow:
    card_id: str
    title: str
    rating: str
    source: str
    reviewed_at: datetime
    due_after: datetime


@dataclass(frozen=True)
class Dashboard:
    counts: scheduling.DueCounts
    mastery: list[scheduling.TopicMastery]
    heatmap: list[list[HeatCell]]  # weeks (Monday first), each 7 days
    streak: int
    total_reviews: int
    reviews_today: int
    challenges: list[ChallengeStatus]
    history: list[HistoryRow]


def _level(count: int) -> int:
    return 0 if count == 0 else 1 if count <= 2 else 2 if count <= 5 else 3 if count <= 10 else 4


def heatmap(days: dict[date, int], today: date, weeks: int = HEATMAP_WEEKS) -> list[list[HeatCell]]:
    first = today - timedelta(days=today.weekday()) - timedelta(weeks=weeks - 1)
    grid = []
    for w in range(weeks):
        week = []
        for d in range(7):
            day = first + timedelta(weeks=w, days=d)
            count = days.get(day, 0)
            week.append(HeatCell(day, count, _level(count), day > today))
        grid.append(week)
    return grid


def challenge_statuses(*, session: Session, user_id: int, catalog: Catalog) -> list[ChallengeStatus]:
    rows = session.exec(
        select(Submission.challenge, Submission.verdict, Submission.created_at).where(
            Submission.user_id == user_id
        )
    ).all()
    out = []
    for challenge in catalog.challenges:
        mine = [r for r in rows if r[0] == challenge.slug]
        verdicts = {r[1] for r in mine}
        status = "passed" if "passed" in verdicts else "failed" if mine else "not started"
        out.append(
            ChallengeStatus(
                slug=challenge.slug,
                title=challenge.meta.title,
                status=status,
                attempts=len(mine),
                last_attempt=max((r[2] for r in mine), default=None),
            )
        )
    return out


def recent_history(*, session: Session, user_id: int, limit: int = HISTORY_LENGTH) -> list[HistoryRow]:
    rows = session.exec(
        select(Review, Card.title)
        .join(Card, col(Card.id) == col(Review.card_id))
        .where(Review.user_id == user_id)
        .order_by(col(Review.reviewed_at).desc(), col(Review.id).desc())
        .limit(limit)
    ).all()
    return [
        HistoryRow(
            card_id=review.card_id,
            title=title,
            rating=scheduling.RATING_NAMES[Rating(review.rating)],
            source=review.source,
            reviewed_at=review.reviewed_at,
            due_after=review.due_after,
        )
        for review, title in rows
    ]


def build_dashboard(
    *, session: Session, user: User, settings: Settings, catalog: Catalog, now: datetime | None = None
) -> Dashboard:
    now = now or utcnow()
    assert user.id is not None
    today = now.date()
    days = scheduling.review_days(
        session=session,
        user_id=user.id,
        since=scheduling.start_of_day(now) - timedelta(weeks=HEATMAP_WEEKS + 1),
    )
    total = len(session.exec(select(Review.id).where(Review.user_id == user.id)).all())
    return Dashboard(
        counts=scheduling.due_counts(session=session, user=user, settings=settings, now=now),
        mastery=scheduling.mastery_by_topic(session=session, user=user, settings=settings, now=now),
        heatmap=heatmap(days, today),
        streak=scheduling.streak(days, today),
        total_reviews=total,
        reviews_today=days.get(today, 0),
        challenges=challenge_statuses(session=session, user_id=user.id, catalog=catalog),
        history=recent_history(session=session, user_id=user.id),
    )


def dashboard_json(board: Dashboard) -> dict[str, Any]:
    counts = board.counts
    return {
        "due": {
            "now": counts.due_now,
            "today": counts.today,
            "reviews_today": counts.due_today,
            "new_today": counts.new_today,
            "week": counts.due_week,
            "unseen": counts.unseen,
            "interview_in_days": counts.interview_days,
        },
        "mastery": [{**asdict(m), "percent": m.percent} for m in board.mastery],
        "reviews_per_day": {
            cell.day.isoformat(): cell.count for week in board.heatmap for cell in week if cell.count
        },
        "streak": board.streak,
        "total_reviews": board.total_reviews,
        "reviews_today": board.reviews_today,
        "challenges": [
            {**asdict(c), "last_attempt": c.last_attempt.isoformat() if c.last_attempt else None}
            for c in board.challenges
        ],
        "history": [
            {**asdict(h), "reviewed_at": h.reviewed_at.isoformat(), "due_after": h.due_after.isoformat()}
            for h in board.history
        ],
    }
