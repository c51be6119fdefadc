"""An Again card comes back in the same quiz; undo of the last rating puts the FSRS state back exactly."""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fsrs import Rating
from sqlmodel import Session, select

from app.config import Settings
from app.models import CardProgress, Quiz, QuizItem, Review, User
from app.services import quiz as quizzes
from app.services import quiz_learning, scheduling
from app.services.errors import ServiceError
from tests.services.factories import make_user

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def recall_quiz(db: Session, user: User, settings: Settings, size: int = 2, topic: str = "rope") -> Quiz:
    spec = quizzes.QuizSpec(topics=(topic,), size=size, kinds=("recall",), seed=1)
    return quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)


def items(db: Session, quiz: Quiz) -> list[QuizItem]:
    db.expire_all()
    return quizzes.quiz_items(session=db, quiz=quiz)


def rate(db: Session, user: User, item: QuizItem, rating: Rating, settings: Settings, now: datetime) -> None:
    quizzes.answer_item(session=db, user=user, item=item, settings=settings, text="x", now=now)
    quizzes.rate_item(session=db, user=user, item=item, rating=rating, settings=settings, now=now)


def fresh_progress(db: Session, user: User, card_id: str) -> dict[str, Any] | None:
    """The card's FSRS state as stored, read back from the database (nothing cached)."""
    db.expire_all()
    assert user.id is not None
    return quiz_learning.progress_fields(
        scheduling.get_progress(session=db, user_id=user.id, card_id=card_id)
    )


def bits(state: dict[str, Any]) -> dict[str, Any]:
    """Floats as their 8 bytes, so equal means bit-for-bit equal (not merely ==)."""
    return {k: struct.pack("<d", v) if isinstance(v, float) else v for k, v in state.items()}


def test_again_brings_the_card_back_at_the_end_of_the_quiz(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    quiz = recall_quiz(db, user, settings, size=2)
    first, second = items(db, quiz)
    rate(db, user, first, Rating.Again, settings, NOW)
    now = items(db, quiz)
    assert len(now) == 3 and quiz.size == 3
    repeat = now[2]
    assert (repeat.card_id, repeat.kind, repeat.repeat_of, repeat.payload) == (
        first.card_id, "recall", first.id, first.payload,
    )  # fmt: skip
    assert quizzes.current_position(now) == 1  # the next card first, then the repeat
    rate(db, user, second, Rating.Good, settings, NOW + timedelta(seconds=30))
    db.refresh(quiz)
    assert quiz.finished_at is None  # the repeat is still to come
    # Again on every repeat: it comes back up to three times, then the quiz ends.
    for n in range(quiz_learning.MAX_REPEATS):
        pending = items(db, quiz)[quizzes.current_position(items(db, quiz)) or 0]
        assert pending.card_id == first.card_id and pending.repeat_of is not None
        rate(db, user, pending, Rating.Again, settings, NOW + timedelta(minutes=2 + n))
    final = items(db, quiz)
    assert len(final) == 2 + quiz_learning.MAX_REPEATS
    assert quizzes.current_position(final) is None
    db.refresh(quiz)
    assert quiz.finished_at is not None
    # Every asking was a review FSRS saw, in its learning steps.
    assert (
        len(db.exec(select(Review).where(Review.card_id == first.card_id)).all())
        == 1 + quiz_learning.MAX_REPEATS
    )


def test_only_again_brings_a_card_back(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    quiz = recall_quiz(db, user, settings, size=3)
    for item, rating in zip(items(db, quiz), (Rating.Hard, Rating.Good, Rating.Easy), strict=True):
        rate(db, user, item, rating, settings, NOW)
    assert len(items(db, quiz)) == 3
    db.refresh(quiz)
    assert quiz.finished_at is not None


@pytest.mark.parametrize("rating", list(Rating))
def test_undo_restores_every_field_of_the_fsrs_state_bit_for_bit(
    db: Session, settings: Settings, rating: Rating
) -> None:
    user = make_user(db, email="a@example.com")
    quiz = recall_quiz(db, user, settings, size=1)
    (item,) = items(db, quiz)
    # A card with a history: in the Review state, with stability and difficulty of many digits.
    for days, earlier in ((0, Rating.Good), (3, Rating.Good), (12, Rating.Hard)):
        scheduling.review_card(
            session=db, user=user, card_id=item.card_id, rating=earlier, source="recall",
            settings=settings, now=NOW - timedelta(days=40 - days),
        )  # fmt: skip
    db.commit()
    before = fresh_progress(db, user, item.card_id)
    assert before is not None and before["state"] == 2 and before["reps"] == 3
    reviews_before = [r.id for r in db.exec(select(Review)).all()]

    rate(db, user, item, rating, settings, NOW)
    after = fresh_progress(db, user, item.card_id)
    assert after != before  # the rating changed the state
    undone = quiz_learning.undo_last_rating(session=db, quiz=quiz, now=NOW)

    restored = fresh_progress(db, user, item.card_id)
    assert restored is not None
    assert bits(restored) == bits(before)
    assert restored["due"].tzinfo is not None and restored["due"] == before["due"]
    assert [r.id for r in db.exec(select(Review)).all()] == reviews_before  # its review row is gone
    assert (undone.rating, undone.rated_at, undone.due_after) == (None, None, None)
    assert quizzes.item_state(undone) == "revealed"  # the rating buttons again
    assert len(items(db, quiz)) == 1  # an Again's repeat went with it
    db.refresh(quiz)
    assert quiz.finished_at is None and quiz.size == 1
    # Rated again, it behaves as the first time did.
    rate_again = items(db, quiz)[0]
    quizzes.rate_item(session=db, user=user, item=rate_again, rating=rating, settings=settings, now=NOW)
    assert fresh_progress(db, user, item.card_id) == after


def test_undo_of_a_first_review_leaves_no_progress_row(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    quiz = recall_quiz(db, user, settings, size=1)
    (item,) = items(db, quiz)
    counts = scheduling.due_counts(session=db, user=user, settings=settings, now=NOW)
    rate(db, user, item, Rating.Good, settings, NOW)
    assert scheduling.due_counts(session=db, user=user, settings=settings, now=NOW) != counts
    quiz_learning.undo_last_rating(session=db, quiz=quiz, now=NOW)
    assert fresh_progress(db, user, item.card_id) is None
    assert db.exec(select(CardProgress)).all() == [] and db.exec(select(Review)).all() == []
    assert scheduling.due_counts(session=db, user=user, settings=settings, now=NOW) == counts


def test_undo_takes_back_only_the_last_rating_and_then_the_one_before(
    db: Session, settings: Settings
) -> None:
    user = make_user(db, email="a@example.com")
    quiz = recall_quiz(db, user, settings, size=2)
    first, second = items(db, quiz)
    rate(db, user, first, Rating.Good, settings, NOW)
    rate(db, user, second, Rating.Easy, settings, NOW + timedelta(seconds=5))
    offer = quiz_learning.undo_offer(session=db, quiz=quiz)
    assert offer is not None and (offer.position, offer.rating) == (1, "easy")
    assert quiz_learning.undo_last_rating(session=db, quiz=quiz).position == 1
    assert items(db, quiz)[0].rated_at is not None  # the earlier one stays rated
    assert quiz_learning.undo_last_rating(session=db, quiz=quiz).position == 0
    with pytest.raises(ServiceError, match="Nothing to undo") as refused:
        quiz_learning.undo_last_rating(session=db, quiz=quiz)
    assert refused.value.status == 409
    assert quiz_learning.undo_offer(session=db, quiz=quiz) is None


def test_no_undo_once_the_card_was_reviewed_elsewhere(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    quiz = recall_quiz(db, user, settings, size=1)
    (item,) = items(db, quiz)
    rate(db, user, item, Rating.Hard, settings, NOW)
    scheduling.review_card(
        session=db, user=user, card_id=item.card_id, rating=Rating.Good, source="challenge",
        settings=settings, now=NOW + timedelta(minutes=1),
    )  # fmt: skip
    db.commit()
    assert quiz_learning.undo_offer(session=db, quiz=quiz) is None
    with pytest.raises(ServiceError, match="reviewed since"):
        quiz_learning.undo_last_rating(session=db, quiz=quiz)


def test_undo_of_a_choice_answer_opens_the_question_again(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(topics=("kv-cache-contents",), size=1, kinds=("choice",), seed=3)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    (item,) = items(db, quiz)
    wrong = next(i for i, o in enumerate(item.payload["options"]) if not o["correct"])
    quizzes.answer_item(session=db, user=user, item=item, settings=settings, picked=[wrong], now=NOW)
    assert len(items(db, quiz)) == 2  # the wrong pick queued a repeat ...
    undone = quiz_learning.undo_last_rating(session=db, quiz=quiz, now=NOW)
    assert quizzes.item_state(undone) == "open" and undone.response is None and undone.correct is None
    assert fresh_progress(db, user, item.card_id) is None
    assert len(items(db, quiz)) == 1  # ... which went with the undo


def pick_wrong(db: Session, user: User, item: QuizItem, settings: Settings, now: datetime) -> None:
    wrong = next(i for i, o in enumerate(item.payload["options"]) if not o["correct"])
    quizzes.answer_item(session=db, user=user, item=item, settings=settings, picked=[wrong], now=now)


def option_texts(item: QuizItem) -> frozenset[str]:
    return frozenset(o["text"] for o in item.payload["options"])


def test_a_missed_choice_comes_back_with_options_drawn_anew(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(topics=("kv-cache-contents",), size=2, kinds=("choice",), seed=3)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    first, second = items(db, quiz)
    pick_wrong(db, user, first, settings, NOW)
    repeat = items(db, quiz)[2]
    assert (repeat.card_id, repeat.kind, repeat.repeat_of) == (first.card_id, "choice", first.id)
    assert option_texts(repeat) != option_texts(first)  # not the options whose answer was just shown
    assert any(o["correct"] for o in repeat.payload["options"])
    # Missed every time: three repeats, each with a set of options not shown before, then the end.
    right = [i for i, o in enumerate(second.payload["options"]) if o["correct"]]
    quizzes.answer_item(session=db, user=user, item=second, settings=settings, picked=right, now=NOW)
    for n in range(quiz_learning.MAX_REPEATS):
        pending = items(db, quiz)[quizzes.current_position(items(db, quiz)) or 0]
        pick_wrong(db, user, pending, settings, NOW + timedelta(minutes=1 + n))
    askings = [i for i in items(db, quiz) if i.card_id == first.card_id]
    assert len(askings) == 1 + quiz_learning.MAX_REPEATS
    assert len({option_texts(i) for i in askings}) == len(askings)
    db.refresh(quiz)
    assert quiz.finished_at is not None


def test_a_missed_numeric_problem_comes_back_as_a_new_problem(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=2, kinds=("numeric",), seed=5)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    first, _ = items(db, quiz)
    quizzes.answer_item(session=db, user=user, item=first, settings=settings, value="1", unit=None, now=NOW)
    assert first.correct is False
    now = items(db, quiz)
    repeat = now[2]
    assert (repeat.card_id, repeat.kind, repeat.repeat_of) == (first.card_id, "numeric", first.id)
    assert repeat.payload["prompt"] not in {i.payload["prompt"] for i in now[:2]}  # a new problem
    # Right answers are not repeated.
    quizzes.answer_item(
        session=db, user=user, item=repeat, settings=settings,
        value=str(repeat.payload["answer"]), unit=_base_unit(repeat), now=NOW,
    )  # fmt: skip
    assert len(items(db, quiz)) == 3


def _base_unit(item: QuizItem) -> str | None:
    return "bytes" if item.payload["dimension"] == "bytes" else None


def test_a_missed_numeric_card_with_no_new_problem_comes_back_as_recall_when_the_quiz_asks_recall(
    db: Session, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=3, kinds=("recall", "numeric"), seed=5)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    numeric_item = next(i for i in items(db, quiz) if i.kind == "numeric")
    monkeypatch.setattr(quiz_learning.questions, "build_numeric", lambda card, rng, asked: None)
    quizzes.answer_item(
        session=db, user=user, item=numeric_item, settings=settings, value="1", unit=None, now=NOW
    )
    repeat = items(db, quiz)[-1]
    assert (repeat.card_id, repeat.kind, repeat.payload, repeat.repeat_of) == (
        numeric_item.card_id, "recall", {}, numeric_item.id,
    )  # fmt: skip


def test_a_missed_numeric_card_with_no_new_problem_is_not_repeated(
    db: Session, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=1, kinds=("numeric",), seed=5)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    (item,) = items(db, quiz)
    monkeypatch.setattr(quiz_learning.questions, "build_numeric", lambda card, rng, asked: None)
    quizzes.answer_item(session=db, user=user, item=item, settings=settings, value="1", unit=None, now=NOW)
    assert len(items(db, quiz)) == 1
    db.refresh(quiz)
    assert quiz.finished_at is not None
