"""Reading a user's mock interviews, with ownership, and where an interview stands."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session, col, select

from app.enums import MockItemKind, MockPhase, MockStatus
from app.models import MockInterview, MockItem, Submission

MOVED_ON = "That question was already answered, perhaps in another tab: the interview has moved on."


def get_mock(*, session: Session, user_id: int, mock_id: int) -> MockInterview | None:
    """The interview if it belongs to this user; someone else's is indistinguishable from a missing one."""
    mock = session.get(MockInterview, mock_id)
    return mock if mock is not None and mock.user_id == user_id else None


def mock_items(*, session: Session, mock: MockInterview) -> list[MockItem]:
    return list(
        session.exec(
            select(MockItem).where(MockItem.interview_id == mock.id).order_by(col(MockItem.position))
        ).all()
    )


def history(*, session: Session, user_id: int, limit: int = 50) -> list[MockInterview]:
    return list(
        session.exec(
            select(MockInterview)
            .where(MockInterview.user_id == user_id)
            .order_by(col(MockInterview.started_at).desc(), col(MockInterview.id).desc())
            .limit(limit)
        ).all()
    )


def status(mock: MockInterview, now: datetime) -> MockStatus:
    """running | ended (clock stopped, not scored yet) | scored."""
    if mock.scored_at is not None:
        return MockStatus.SCORED
    if mock.ended_at is not None or now >= mock.deadline:
        return MockStatus.ENDED
    return MockStatus.RUNNING


def remaining_seconds(mock: MockInterview, now: datetime) -> float:
    if mock.ended_at is not None:
        return 0.0
    return max(0.0, (mock.deadline - now).total_seconds())


def current_item(items: Sequence[MockItem]) -> MockItem | None:
    """The question being asked: the first not done (the coding problem stays current to the end)."""
    return next((i for i in items if i.done_at is None), None)


def phase(item: MockItem) -> MockPhase:
    """question | follow_up | code."""
    if item.kind == MockItemKind.CHALLENGE:
        return MockPhase.CODE
    return MockPhase.QUESTION if item.answered_at is None else MockPhase.FOLLOW_UP


def challenge_submissions(*, session: Session, item: MockItem) -> list[Submission]:
    ids: list[str] = (item.response or {}).get("submissions", [])
    found = {s.id: s for s in session.exec(select(Submission).where(col(Submission.id).in_(ids))).all()}
    return [found[i] for i in ids if i in found]
