"""Scoring a mock interview once the clock stops, and feeding what was asked into spaced repetition.

The user ticks the key points each answer covered and whether each follow-up answer covered
the card's answer; numeric and multiple-choice answers were checked when given. A card
question scores 0.7 x its main answer (share of key points covered, or 1 right / 0.5 partly
right / 0 wrong) + 0.3 x its follow-up; a question asked but not answered scores 0, and so
does one the clock never reached. The coding problem scores 1 when a submission passed, else
half the share of the grader's tests the last graded submission passed, and counts double in
the overall score (app/services/mock/report.py). A question asked feeds spaced repetition once,
at scoring, and only when the user ticked it for review (their consent: a mock is practice,
and an unasked-for Again would pull a card they know forward): Good from 0.8, Hard from 0.5,
Again below. The coding problem's verdicts feed it already, as every graded submission does
(app/services/grading.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from fsrs import Rating
from sqlmodel import Session

from app.config import Settings
from app.enums import MockItemKind
from app.models import Card, MockInterview, MockItem, User
from app.services import scheduling
from app.services.card_content import content
from app.services.errors import Conflict
from app.services.mock.deadline import close_if_due
from app.services.mock.interviews import mock_items

MAIN_WEIGHT, FOLLOW_UP_WEIGHT = 0.7, 0.3
CHALLENGE_WEIGHT = 2
GOOD_FROM, HARD_FROM = 0.8, 0.5


@dataclass(frozen=True)
class Mark:
    """What the user ticked for one question: key points covered, follow-up covered, and whether
    to schedule its card for review (never unless asked)."""

    key_points: tuple[int, ...] = ()
    follow_up: bool = False
    review: bool = False


def main_score(item: MockItem, n_points: int) -> float:
    if item.answered_at is None:
        return 0.0
    if item.kind == MockItemKind.RECALL:
        return len(item.covered or []) / n_points if n_points else 0.0
    if item.kind == MockItemKind.CHOICE and not item.correct:
        return 0.5 if (item.response or {}).get("partial") else 0.0
    return 1.0 if item.correct else 0.0


def item_score(item: MockItem, n_points: int) -> float:
    return MAIN_WEIGHT * main_score(item, n_points) + FOLLOW_UP_WEIGHT * (
        1.0 if item.follow_up_covered else 0.0
    )


def rating_for(score: float) -> Rating:
    return Rating.Good if score >= GOOD_FROM else Rating.Hard if score >= HARD_FROM else Rating.Again


def score_mock(
    *,
    session: Session,
    user: User,
    mock: MockInterview,
    marks: Mapping[int, Mark],
    settings: Settings,
    now: datetime,
) -> None:
    """Store the user's ticks; feed each question asked that they ticked for review into spaced
    repetition, once. Commits."""
    if not close_if_due(session=session, mock=mock, now=now):
        raise Conflict("The interview is still running: score it once the clock stops.")
    if mock.scored_at is not None:
        raise Conflict("This interview is already scored.")
    assert user.id == mock.user_id
    for item in mock_items(session=session, mock=mock):
        if item.kind == MockItemKind.CHALLENGE or item.asked_at is None or item.card_id is None:
            continue
        card = session.get(Card, item.card_id)
        assert card is not None
        mark = marks.get(item.position, Mark())
        n_points = len(content(card).key_points)
        if item.kind == MockItemKind.RECALL:
            item.covered = sorted({i for i in mark.key_points if 0 <= i < n_points}) if item.answer else []
        item.follow_up_covered = bool(mark.follow_up and item.follow_up_answer)
        session.add(item)
        if not mark.review:
            continue
        rating = rating_for(item_score(item, n_points))
        progress = scheduling.review_card(
            session=session,
            user=user,
            card_id=card.id,
            rating=rating,
            source="mock",
            settings=settings,
            now=now,
        )
        item.rating, item.due_after = int(rating), progress.due
        session.add(item)
    mock.scored_at = now
    session.add(mock)
    session.commit()
    session.refresh(mock)
