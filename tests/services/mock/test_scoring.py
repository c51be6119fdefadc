"""app/services/mock/scoring.py: marking an interview scores it once and feeds the spaced-repetition
schedule with the questions the user ticked for review, and only those."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fsrs import Rating
from sqlmodel import Session, select

from app.config import Settings
from app.models import Card, Review
from app.services import mock as mocks
from app.services import scheduling
from app.services.errors import ServiceError
from tests.services.factories import catalog, make_user
from tests.services.mock.helpers import NOW, start


def test_scoring_feeds_spaced_repetition_once(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope", "flashattention"))
    with pytest.raises(ServiceError, match="still running"):
        mocks.score_mock(session=db, user=user, mock=mock, marks={}, settings=settings, now=NOW)
    items = mocks.mock_items(session=db, mock=mock)
    # Answer the first question and its follow-up, half of the second, then the clock runs out.
    for position, step in [(0, "question"), (0, "follow_up"), (1, "question")]:
        mocks.answer(session=db, mock=mock, position=position, step=step, settings=settings,
                     now=NOW + timedelta(minutes=1 + position), text="something")  # fmt: skip
    end = mock.deadline + timedelta(seconds=5)
    n0 = len(db.get(Card, items[0].card_id).data["key_points"])
    marks = {
        0: mocks.Mark(tuple(range(n0)), True, review=True),
        1: mocks.Mark((0,), True, review=True),
        2: mocks.Mark((0, 1), True, review=True),
    }
    mocks.score_mock(session=db, user=user, mock=mock, marks=marks, settings=settings, now=end)
    items = mocks.mock_items(session=db, mock=mock)
    assert items[0].covered == list(range(n0)) and items[0].follow_up_covered is True
    assert items[1].follow_up_covered is False  # no follow-up answer: nothing to cover
    assert items[2].covered is None and items[2].rating is None and len(items) == 4  # never reached
    assert items[0].rating == int(Rating.Good) and items[1].rating == int(Rating.Again)
    reviews = db.exec(select(Review).where(Review.user_id == user.id, Review.source == "mock")).all()
    assert sorted(r.card_id for r in reviews) == sorted([items[0].card_id, items[1].card_id])
    again = scheduling.get_progress(session=db, user_id=user.id, card_id=items[1].card_id)
    assert again is not None and again.due == items[1].due_after
    with pytest.raises(ServiceError, match="already scored"):
        mocks.score_mock(session=db, user=user, mock=mock, marks={}, settings=settings, now=end)

    report = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=end)
    assert report.scored and report.ended_by == "deadline" and report.seconds_used == 15 * 60
    first, second, third, _ = report.items
    assert first.score == pytest.approx(1.0) and first.seconds == 60 and first.answer_seconds == 60
    assert second.answered and second.follow_up_answer is None
    assert second.seconds == (mock.deadline - (NOW + timedelta(minutes=1))).total_seconds()
    assert not third.reached and third.seconds is None and third.score == 0
    assert report.score == pytest.approx(sum(r.score for r in report.items) / 4)
    assert {t.slug for t in report.by_topic} <= {"rope", "flashattention"}
    assert [r.target for r in report.review] == [second.card_id]  # reached and weak: not the unreached one


def test_only_a_question_ticked_for_review_is_scheduled(db: Session, settings: Settings) -> None:
    user = make_user(db, guest_token="g")
    mock = start(db, settings, user, topics=("rope", "flashattention"))
    items = mocks.mock_items(session=db, mock=mock)
    for minute, (position, step) in enumerate([(0, "question"), (0, "follow_up"), (1, "question")]):
        mocks.answer(session=db, mock=mock, position=position, step=step, settings=settings,
                     now=NOW + timedelta(minutes=1 + minute), text="something")  # fmt: skip
    end = mock.deadline + timedelta(seconds=5)
    # Two weak answers: each would be scheduled Again, but only the second is ticked for review.
    marks = {0: mocks.Mark((0,)), 1: mocks.Mark((0,), review=True)}
    mocks.score_mock(session=db, user=user, mock=mock, marks=marks, settings=settings, now=end)
    unticked, ticked = mocks.mock_items(session=db, mock=mock)[:2]
    assert unticked.rating is None and unticked.due_after is None
    assert scheduling.get_progress(session=db, user_id=user.id, card_id=items[0].card_id) is None
    reviews = db.exec(select(Review).where(Review.user_id == user.id)).all()
    assert [(r.card_id, r.source) for r in reviews] == [(items[1].card_id, "mock")]
    assert ticked.rating == int(Rating.Again)
    progress = scheduling.get_progress(session=db, user_id=user.id, card_id=items[1].card_id)
    assert progress is not None and progress.due == ticked.due_after
    report = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=end)
    links = {r.target: r for r in report.review}
    assert links[items[0].card_id].due_after is None and links[items[1].card_id].rating == "again"
