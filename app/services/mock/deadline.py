"""The server's clock for a mock interview.

An interview stores its start and its deadline; every request compares the injected clock's
"now" (app/services/clock.py) with the deadline. From the deadline on, nothing more is
accepted and the interview closes itself, on the first request that touches it. There is no
pause. The user may end it early; it also ends once every question is answered when there is
no coding problem.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update
from sqlmodel import Session, col, select

from app.enums import MockEndedBy
from app.models import MockInterview
from app.services.errors import Conflict


def _close(*, session: Session, mock: MockInterview, at: datetime, by: str) -> None:
    """Stop the clock once: a second request racing this one changes nothing. Commits."""
    session.exec(
        update(MockInterview)  # type: ignore[call-overload]
        .where(col(MockInterview.id) == mock.id, col(MockInterview.ended_at).is_(None))
        .values(ended_at=at, ended_by=by)
    )
    session.commit()
    session.refresh(mock)


def close_if_due(*, session: Session, mock: MockInterview, now: datetime) -> bool:
    """Close the interview at its deadline once that has passed; True when it is over (either way)."""
    if mock.ended_at is None and now >= mock.deadline:
        _close(session=session, mock=mock, at=mock.deadline, by="deadline")
    return mock.ended_at is not None


def ensure_running(*, session: Session, mock: MockInterview, now: datetime) -> None:
    """Conflict with a clear message when the clock has stopped."""
    if close_if_due(session=session, mock=mock, now=now):
        if mock.ended_by == MockEndedBy.DEADLINE:
            at = mock.deadline.strftime("%H:%M:%S UTC")
            raise Conflict(
                f"Time is up: the interview ended at {at}, and answers after the deadline are refused."
            )
        raise Conflict("This interview is over: answers are no longer accepted.")


def finish(*, session: Session, mock: MockInterview, now: datetime) -> None:
    """The user ends the interview early (nothing is paused: the clock just stops)."""
    ensure_running(session=session, mock=mock, now=now)
    _close(session=session, mock=mock, at=now, by="user")


def running_mock(*, session: Session, user_id: int, now: datetime) -> MockInterview | None:
    """The user's interview still on the clock, if any (closing any whose deadline has passed)."""
    for mock in session.exec(
        select(MockInterview).where(MockInterview.user_id == user_id, col(MockInterview.ended_at).is_(None))
    ).all():
        if not close_if_due(session=session, mock=mock, now=now):
            return mock
    return None
