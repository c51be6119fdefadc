"""app/services/mock/answers.py: the order answers go in, how numeric and choice answers are checked,
the code."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import Session

from app.config import Settings
from app.models import Submission
from app.services import mock as mocks
from app.services import numeric
from app.services.errors import ServiceError
from tests.services.factories import make_user
from tests.services.mock.helpers import NOW, answer_all, start


def test_flow_question_then_follow_up_then_the_next(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",))
    items = mocks.mock_items(session=db, mock=mock)
    assert mocks.phase(mocks.current_item(items)) == "question"
    with pytest.raises(ServiceError, match="moved on"):  # the follow-up before the answer
        mocks.answer(session=db, mock=mock, position=0, step="follow_up", settings=settings, now=NOW)
    mocks.answer(
        session=db, mock=mock, position=0, step="question", settings=settings, now=NOW, text="rotate"
    )
    with pytest.raises(ServiceError, match="moved on"):  # a second tab answering again
        mocks.answer(session=db, mock=mock, position=0, step="question", settings=settings, now=NOW, text="x")
    current = mocks.current_item(mocks.mock_items(session=db, mock=mock))
    assert current.position == 0 and mocks.phase(current) == "follow_up"
    later = NOW + timedelta(seconds=30)
    mocks.answer(session=db, mock=mock, position=0, step="follow_up", settings=settings, now=later, text="y")
    items = mocks.mock_items(session=db, mock=mock)
    assert items[0].done_at == later and items[1].asked_at == later
    assert mocks.current_item(items).position == 1
    with pytest.raises(ServiceError, match="limited|under") as info:
        mocks.answer(
            session=db, mock=mock, position=1, step="question", settings=settings, now=later,
            text="x" * (settings.mock_answer_max_chars + 1),
        )  # fmt: skip
    assert info.value.status == 422


def test_numeric_and_choice_are_checked_when_answered(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, minutes=20, topics=("kv-memory", "rope", "mha-mqa-gqa"))
    items = mocks.mock_items(session=db, mock=mock)
    by_kind = {i.kind: i for i in items}
    assert {"numeric", "choice", "recall"} <= set(by_kind)
    now = NOW
    for item in items:
        if item.kind == "numeric":
            problem = item.payload["numeric"]
            value, unit = str(problem["answer"] / numeric.BYTE_UNITS.get(problem["unit"], 1)), problem["unit"]
            if problem["dimension"] != "bytes":
                value, unit = str(problem["answer"]), None
            mocks.answer(session=db, mock=mock, position=item.position, step="question", settings=settings,
                         now=now, value=value, unit=unit)  # fmt: skip
        elif item.kind == "choice":
            right = [i for i, o in enumerate(item.payload["choice"]["options"]) if o["correct"]]
            mocks.answer(session=db, mock=mock, position=item.position, step="question", settings=settings,
                         now=now, picked=right)  # fmt: skip
        else:
            mocks.answer(
                session=db, mock=mock, position=item.position, step="question", settings=settings, now=now
            )
        mocks.answer(
            session=db, mock=mock, position=item.position, step="follow_up", settings=settings, now=now
        )
    checked = {i.kind: i for i in mocks.mock_items(session=db, mock=mock)}
    assert checked["numeric"].correct is True and checked["choice"].correct is True
    assert checked["recall"].correct is None
    fresh = start(db, settings, make_user(db, guest_token="h"), minutes=20, topics=("kv-memory", "rope"))
    choice = next(i for i in mocks.mock_items(session=db, mock=fresh) if i.kind == "choice")
    for i in mocks.mock_items(session=db, mock=fresh)[: choice.position]:
        for step in ("question", "follow_up"):
            mocks.answer(session=db, mock=fresh, position=i.position, step=step, settings=settings, now=NOW)
    with pytest.raises(ServiceError, match="No such option") as refused:
        mocks.answer(session=db, mock=fresh, position=choice.position, step="question", settings=settings,
                     now=NOW, picked=[99])  # fmt: skip
    assert (refused.value.status, refused.value.field) == (422, "picked")


def test_code_goes_in_only_on_the_clock_and_after_the_questions(db: Session, settings: Settings) -> None:
    class Queue:
        def submit(self, *, session: Session, user_id: int, challenge: str, code: str) -> Submission:
            submission = Submission(id=f"q{len(code)}", user_id=user_id, challenge=challenge, code=code)
            session.add(submission)
            session.commit()
            return submission

    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope",), with_challenge=True)
    with pytest.raises(ServiceError, match="after the questions"):
        mocks.submit_code(session=db, mock=mock, grading=Queue(), code="x", now=NOW)  # type: ignore[arg-type]
    answer_all(db, settings, mock, every=10)
    mocks.submit_code(session=db, mock=mock, grading=Queue(), code="xy", now=NOW + timedelta(minutes=3))  # type: ignore[arg-type]
    item = mocks.mock_items(session=db, mock=mock)[-1]
    assert item.response == {"submissions": ["q2"]} and item.answered_at == NOW + timedelta(minutes=3)
    with pytest.raises(ServiceError, match="Time is up"):
        mocks.submit_code(session=db, mock=mock, grading=Queue(), code="xyz", now=mock.deadline)  # type: ignore[arg-type]
