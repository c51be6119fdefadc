"""The question JSON the quiz and the mock freeze in their items keeps the shape pages, the API and
existing databases rely on, now that one module (app/services/questions.py) builds it for both."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

from sqlmodel import Session

from app.config import Settings
from app.models import Card
from app.routes.question_views import quiz_item_view
from app.services import mock as mocks
from app.services import quiz as quizzes
from app.services.numeric import NumericQuestion
from tests.services.factories import catalog, make_user

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NUMERIC_KEYS = {f.name for f in fields(NumericQuestion)}

# A right option carries its full key point (`key_point`) since options became short forms.
# Rows as an older kvprep stored them: options without the card they came from, a numeric
# problem from before `config` and `abs_tolerance` existed.
OLD_CHOICE = {
    "prompt": "Which of these belong in a strong answer? Tick every one that does.",
    "options": [
        {"text": "Keys and values of every earlier token", "correct": True, "why": None},
        {"text": "The attention weights", "correct": False, "why": "They are recomputed every step."},
    ],
}
OLD_NUMERIC = {
    "generator": "kv_bytes_per_token",
    "prompt": "How much KV cache does **one token** take in **GPT-2 small**, in **fp16**?",
    "answer": 36864,
    "dimension": "bytes",
    "unit": "KiB",
    "units": ["bytes", "KiB", "MiB", "KB", "MB"],
    "tolerance": 0.005,
    "solution": ["2 x 12 x 12 x 64 x 2 = 36,864 bytes = 36.00 KiB."],
    "answer_text": "36.00 KiB",
}


def test_quiz_and_mock_store_the_shapes_they_always_did(db: Session, settings: Settings) -> None:
    user = make_user(db, email="shape@example.com")
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=3, seed=7)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    items = {i.kind: i for i in quizzes.quiz_items(session=db, quiz=quiz)}
    assert items["recall"].payload == {}
    assert set(items["choice"].payload) == {"prompt", "options"}
    for option in items["choice"].payload["options"]:
        assert {"text", "correct", "why"} <= set(option) <= {"text", "correct", "why", "card_id", "key_point"}
    assert set(items["numeric"].payload) == NUMERIC_KEYS

    guest = make_user(db, guest_token="shape")
    mock = mocks.start_mock(
        session=db,
        user=guest,
        spec=mocks.MockSpec(30, ("kv-memory", "rope"), None, False, seed=2),
        catalog=catalog(),
        settings=settings,
        now=NOW,
    )
    for item in mocks.mock_items(session=db, mock=mock):
        extra = {item.kind} if item.kind in ("choice", "numeric") else set()
        assert set(item.payload) == {"follow_up"} | extra
        assert set(item.payload["follow_up"]) == {"question", "answer", "probes", "difficulty"}
        if item.kind == "numeric":
            assert set(item.payload["numeric"]) == NUMERIC_KEYS
        if item.kind == "choice":
            assert set(item.payload["choice"]) == {"prompt", "options"}


def test_an_old_quiz_row_still_opens_and_grades(db: Session, settings: Settings) -> None:
    user = make_user(db, email="old@example.com")
    spec = quizzes.QuizSpec(topics=("kv-memory",), size=3, seed=7)
    quiz = quizzes.start_quiz(session=db, user=user, spec=spec, settings=settings, now=NOW)
    items = {i.kind: i for i in quizzes.quiz_items(session=db, quiz=quiz)}
    choice, problem = items["choice"], items["numeric"]
    choice.payload, problem.payload = OLD_CHOICE, OLD_NUMERIC
    db.add_all([choice, problem])
    db.commit()

    card = db.get(Card, problem.card_id)
    assert card is not None
    view = quiz_item_view(problem, card).model_dump(exclude_unset=True)
    assert view["config"] == {} and view["units"] == OLD_NUMERIC["units"]
    graded = quizzes.answer_item(
        session=db, user=user, item=problem, settings=settings, value="36", unit="KiB", now=NOW
    )
    assert graded.correct is True
    picked = quizzes.answer_item(session=db, user=user, item=choice, settings=settings, picked=[0], now=NOW)
    assert picked.correct is True and picked.response == {"picked": [0]}


def test_an_old_mock_row_still_reports(db: Session, settings: Settings) -> None:
    guest = make_user(db, guest_token="old-mock")
    mock = mocks.start_mock(
        session=db,
        user=guest,
        spec=mocks.MockSpec(15, ("kv-memory",), None, False, seed=3),
        catalog=catalog(),
        settings=settings,
        now=NOW,
    )
    items = mocks.mock_items(session=db, mock=mock)
    follow = {"question": "Why?", "answer": "Because."}
    items[1].kind, items[1].payload = "choice", {"follow_up": follow, "choice": OLD_CHOICE}
    items[2].kind, items[2].payload = "numeric", {"follow_up": follow, "numeric": OLD_NUMERIC}
    db.add_all(items)
    db.commit()
    for item in items:
        mocks.answer(
            session=db, mock=mock, position=item.position, step="question", settings=settings, now=NOW,
            text="an answer", value="36 KiB", picked=[1],
        )  # fmt: skip
        mocks.answer(
            session=db, mock=mock, position=item.position, step="follow_up", settings=settings, now=NOW,
            text="a follow-up",
        )  # fmt: skip
    report = mocks.build_report(session=db, mock=mock, catalog=catalog(), now=NOW)
    by_kind = {r.kind: r for r in report.items}
    assert by_kind["numeric"].correct is True and by_kind["numeric"].numeric is not None
    assert by_kind["choice"].correct is False
    assert [m.where for m in by_kind["choice"].matched] == ["option"]
