"""Quiz building: which cards, which kinds, multiple choice from key points and wrong answers, grading."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from fsrs import Rating
from sqlmodel import Session, col, select

from app.config import Settings
from app.models import Card, QuizItem
from app.routes.question_views import quiz_item_view
from app.services import numeric, scheduling
from app.services import quiz as quizzes
from app.services.choice_options import short_forms
from app.services.errors import ServiceError
from tests.services.factories import make_user

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def cards(db: Session, *topics: str) -> list[Card]:
    """The live cards of the topics (a retired card, superseded_by, is never quizzed)."""
    query = select(Card).where(col(Card.topic).in_(topics), col(Card.retired).is_(False)).order_by(Card.id)
    return list(db.exec(query).all())


def test_a_short_mixed_quiz_has_one_question_of_each_kind(db: Session) -> None:
    picked = cards(db, "kv-memory", "rope")[:3]
    kinds = quizzes.assign_kinds(picked, quizzes.KINDS)
    assert sorted(kinds) == ["choice", "numeric", "recall"]
    for card, kind in zip(picked, kinds, strict=True):
        assert kind != "numeric" or numeric.has_numeric(card.topic)
    assert quizzes.assign_kinds(cards(db, "rope"), quizzes.KINDS).count("numeric") == 0
    assert set(quizzes.assign_kinds(picked, ["choice"])) == {"choice"}


def test_choice_options_are_key_points_against_wrong_answers(db: Session) -> None:
    card = cards(db, "kv-cache-contents")[0]
    topic_cards = cards(db, "kv-cache-contents")
    wrong_texts = {quizzes._unquote(w["answer"]) for c in topic_cards for w in c.data["wrong_answers"]}
    with_own = 0
    for seed in range(20):
        payload = quizzes.build_choice(card, topic_cards, random.Random(seed))
        options = payload["options"]
        right = [o for o in options if o["correct"]]
        wrong = [o for o in options if not o["correct"]]
        assert 1 <= len(right) <= 3 and 1 <= len(wrong) <= 3
        assert all(o["key_point"] in card.data["key_points"] for o in right)
        assert all(o["text"] in short_forms(o["key_point"]) for o in right)
        assert all(o["text"] in wrong_texts and o["why"] for o in wrong)
        assert not any(o["text"].startswith('"') for o in options)
        own = {quizzes._unquote(w["answer"]) for w in card.data["wrong_answers"]}
        with_own += bool(own & {o["text"] for o in wrong})
    # The card's own wrong answers come first, where their lengths fit (app/services/choice_options.py).
    assert with_own >= 15, with_own


def test_grading_a_multiple_choice_answer() -> None:
    payload = {"options": [{"correct": True}, {"correct": False}, {"correct": True}, {"correct": False}]}
    assert quizzes.grade_choice(payload, {0, 2}) == Rating.Good
    assert quizzes.grade_choice(payload, {0}) == Rating.Hard  # a key point missed
    assert quizzes.grade_choice(payload, {0, 1, 2}) == Rating.Again  # a wrong answer picked
    assert quizzes.grade_choice(payload, set()) == Rating.Again


def test_topic_mode_puts_due_cards_first_then_unseen(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    pool = cards(db, "kv-memory")
    scheduling.review_card(
        session=db,
        user=user,
        card_id=pool[-1].id,
        rating=Rating.Again,
        source="recall",
        settings=settings,
        now=NOW,
    )
    scheduling.review_card(
        session=db,
        user=user,
        card_id=pool[0].id,
        rating=Rating.Easy,
        source="recall",
        settings=settings,
        now=NOW,
    )
    db.commit()
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=3)
    later = NOW + timedelta(minutes=5)
    chosen = quizzes.select_cards(session=db, user=user, spec=spec, settings=settings, now=later)
    assert chosen[0].id == pool[-1].id  # due (Again, 1 minute)
    assert chosen[-1].id == pool[0].id  # not due for days: last
    assert len({c.id for c in chosen}) == 3


def test_due_mode_and_difficulty_filter(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(mode="due", size=50)
    fresh = quizzes.select_cards(session=db, user=user, spec=spec, settings=settings, now=NOW)
    assert len(fresh) == settings.new_cards_per_day  # nothing seen: today's new cards
    hard = quizzes.QuizSpec(mode="due", size=50, difficulty="hard")
    assert all(
        c.difficulty == "hard"
        for c in quizzes.select_cards(session=db, user=user, spec=hard, settings=settings, now=NOW)
    )


def test_weakest_mode_starts_with_the_weakest_studied_topic(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    for card in cards(db, "rope"):
        scheduling.review_card(
            session=db,
            user=user,
            card_id=card.id,
            rating=Rating.Again,
            source="recall",
            settings=settings,
            now=NOW,
        )
    for card in cards(db, "kv-memory"):
        scheduling.review_card(
            session=db,
            user=user,
            card_id=card.id,
            rating=Rating.Easy,
            source="recall",
            settings=settings,
            now=NOW,
        )
    db.commit()
    assert scheduling.weakest_topics(session=db, user=user, settings=settings, now=NOW)[:2] == [
        "rope",
        "kv-memory",
    ]
    spec = quizzes.QuizSpec(mode="weakest", size=3)
    chosen = quizzes.select_cards(session=db, user=user, spec=spec, settings=settings, now=NOW)
    assert chosen[0].topic == "rope"


def test_numeric_only_quiz_takes_only_cards_with_numbers(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(size=6, kinds=("numeric",), seed=1)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    items = quizzes.quiz_items(session=db, quiz=quiz)
    assert len(items) == 6 and {i.kind for i in items} == {"numeric"}
    assert all(i.payload["answer"] > 0 and i.payload["units"] for i in items)


def test_start_quiz_refuses_what_cannot_be_asked(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    with pytest.raises(ServiceError, match="1 to 50"):
        quizzes.start_quiz(session=db, user=user, spec=quizzes.QuizSpec(size=51), settings=settings)
    with pytest.raises(ServiceError, match="question kinds"):
        quizzes.start_quiz(session=db, user=user, spec=quizzes.QuizSpec(kinds=("essay",)), settings=settings)
    with pytest.raises(ServiceError, match="No card"):
        spec = quizzes.QuizSpec(topics=("rope",), kinds=("numeric",))
        quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings)


def test_answering_and_rating_follow_the_rules(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=3, seed=7)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    items = {i.kind: i for i in quizzes.quiz_items(session=db, quiz=quiz)}
    assert set(items) == {"recall", "choice", "numeric"}

    recall = items["recall"]
    with pytest.raises(ServiceError, match="Reveal"):
        quizzes.rate_item(session=db, user=user, item=recall, rating=Rating.Good, settings=settings)
    quizzes.answer_item(session=db, user=user, item=recall, settings=settings, text="K and V", now=NOW)
    rated = quizzes.rate_item(
        session=db,
        user=user,
        item=recall,
        rating=Rating.Hard,
        key_points=[0, 2, 99],
        settings=settings,
        now=NOW,
    )
    assert rated.response == {"answer": "K and V", "key_points": [0, 2]} and rated.rating == int(Rating.Hard)
    with pytest.raises(ServiceError, match="already"):
        quizzes.rate_item(session=db, user=user, item=recall, rating=Rating.Good, settings=settings)

    numeric_item = items["numeric"]
    value = str(numeric_item.payload["answer"])
    unit = "bytes" if numeric_item.payload["dimension"] == "bytes" else None
    answered = quizzes.answer_item(
        session=db, user=user, item=numeric_item, settings=settings, value=value, unit=unit, now=NOW
    )
    assert answered.correct and answered.rating == int(Rating.Good)
    with pytest.raises(ServiceError, match="already answered"):
        quizzes.answer_item(session=db, user=user, item=numeric_item, settings=settings, value="1")

    choice = items["choice"]
    wrong = next(i for i, o in enumerate(choice.payload["options"]) if not o["correct"])
    answered = quizzes.answer_item(
        session=db, user=user, item=choice, settings=settings, picked=[wrong], now=NOW
    )
    assert answered.correct is False and answered.rating == int(Rating.Again)
    view = quiz_item_view(answered, db.get(Card, answered.card_id)).model_dump(exclude_unset=True)
    assert view["options"][wrong]["why"] and view["rating"] == "again"
    db.refresh(quiz)
    # The miss is asked once more at the end, as a choice again; right this time, the quiz ends.
    assert quiz.finished_at is None and quiz.size == 4
    repeat = quizzes.get_item(session=db, quiz=quiz, position=3)
    assert repeat is not None and repeat.kind == "choice" and repeat.repeat_of == choice.id
    right = [i for i, o in enumerate(repeat.payload["options"]) if o["correct"]]
    quizzes.answer_item(session=db, user=user, item=repeat, settings=settings, picked=right, now=NOW)
    db.refresh(quiz)
    assert quiz.finished_at == NOW and quiz.size == 4


def test_a_question_hides_its_answer_until_answered(db: Session, settings: Settings) -> None:
    user = make_user(db, email="a@example.com")
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=3, seed=3)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    for item in db.exec(select(QuizItem).where(QuizItem.quiz_id == quiz.id)).all():
        view = quiz_item_view(item, db.get(Card, item.card_id)).model_dump(exclude_unset=True)
        text = repr(view)
        assert "key_points" not in view and "solution" not in view and "'correct'" not in text
        if item.kind == "numeric":
            assert item.payload["answer_text"] not in text


def test_the_hardware_kinds_appear_in_a_numeric_quiz(db: Session, settings: Settings) -> None:
    """Roofline and prefill-vs-decode cards are asked as bandwidth, ridge and crossover problems."""
    user = make_user(db, email="roofline@example.com")
    spec = quizzes.QuizSpec(topics=("roofline", "prefill-vs-decode"), size=7, kinds=("numeric",), seed=3)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    items = quizzes.quiz_items(session=db, quiz=quiz)
    generators = {i.payload["generator"] for i in items}
    assert generators <= {"min_decode_latency", "ridge_point", "crossover_batch"}
    assert "min_decode_latency" in generators and len(generators) >= 2
    timed = next(i for i in items if i.payload["generator"] == "min_decode_latency")
    number, unit = timed.payload["answer_text"].split()
    slipped = quizzes.answer_item(
        session=db, user=user, item=timed, settings=settings, value=number, unit="s", now=NOW
    )
    assert slipped.correct is False and "check the unit" in timed.response["message"]  # type: ignore[index]
    other = next(i for i in items if i.id != timed.id)
    quizzes.answer_item(
        session=db, user=user, item=other, settings=settings, value=other.payload["answer_text"], now=NOW
    )
    assert other.correct is True
