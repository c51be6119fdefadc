"""app/services/mock/deadline.py: the server's clock ends an interview, and so does its last answer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import Session

from app.config import Settings
from app.services import mock as mocks
from app.services.errors import ServiceError
from tests.services.factories import make_user
from tests.services.mock.helpers import NOW, answer_all, start


def test_the_deadline_is_the_servers(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user)
    one_second_left = mock.deadline - timedelta(seconds=1)
    mocks.answer(session=db, mock=mock, position=0, step="question", settings=settings, now=one_second_left)
    with pytest.raises(ServiceError, match="Time is up") as info:
        mocks.answer(
            session=db, mock=mock, position=0, step="follow_up", settings=settings,
            now=mock.deadline + timedelta(seconds=1), text="too late",
        )  # fmt: skip
    assert info.value.status == 409
    db.refresh(mock)
    assert mock.ended_at == mock.deadline and mock.ended_by == "deadline"
    assert mocks.mock_items(session=db, mock=mock)[0].follow_up_answer is None
    assert mocks.remaining_seconds(mock, NOW) == 0


def test_the_interview_closes_when_everything_is_answered(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",))
    answered = 2 * len(mocks.mock_items(session=db, mock=mock))  # a question and a follow-up each
    answer_all(db, settings, mock, every=20)
    db.refresh(mock)
    assert mock.ended_by == "completed" and mock.ended_at == NOW + timedelta(seconds=20 * answered)
    with pytest.raises(ServiceError, match="over"):
        mocks.finish(session=db, mock=mock, now=NOW + timedelta(minutes=2))
