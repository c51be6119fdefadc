"""What the quiz's API and pages share: finding a quiz and its questions, starting one, its view.

A question's view is app/routes/question_views.py's, shared with the mock interview.

A quiz belongs to the user who started it: anyone else gets 404 for it and its questions.
"""

from __future__ import annotations

from datetime import datetime

from fsrs import Rating
from sqlmodel import Session

from app.config import Settings
from app.models import Card, Quiz, QuizItem, User
from app.routes.quiz.models import QuizCreate, QuizItemRow, QuizPublic
from app.services import quiz as quizzes
from app.services.cards import card_titles, get_card, topic_slugs
from app.services.errors import InvalidInput, NotFound
from app.services.scheduling import RATING_NAMES


def load_quiz(session: Session, user: User, quiz_id: int) -> Quiz:
    assert user.id is not None
    quiz = quizzes.get_quiz(session=session, user_id=user.id, quiz_id=quiz_id)
    if quiz is None:
        raise NotFound("Quiz not found")
    return quiz


def load_item(session: Session, user: User, quiz_id: int, position: int) -> tuple[Quiz, QuizItem, Card]:
    quiz = load_quiz(session, user, quiz_id)
    item = quizzes.get_item(session=session, quiz=quiz, position=position)
    card = get_card(session=session, card_id=item.card_id) if item else None
    if item is None or card is None:
        raise NotFound("Question not found")
    return quiz, item, card


def start(session: Session, user: User, settings: Settings, body: QuizCreate, now: datetime) -> Quiz:
    """Start the quiz the body describes; InvalidInput (its `field` named) when it cannot."""
    known = topic_slugs(session=session)
    unknown = [t for t in body.topics if t not in known]
    if unknown:
        raise InvalidInput(f"Unknown topic {unknown[0]!r}", "topics")
    spec = quizzes.QuizSpec(
        mode=body.mode,
        topics=tuple(body.topics),
        difficulty=body.difficulty,
        size=body.size,
        kinds=tuple(body.kinds),
    )
    return quizzes.start_quiz(session=session, user=user, spec=spec, settings=settings, now=now)


def quiz_view(session: Session, quiz: Quiz) -> QuizPublic:
    items = quizzes.quiz_items(session=session, quiz=quiz)
    titles = card_titles(session=session, card_ids=[i.card_id for i in items])
    return QuizPublic(
        id=quiz.id,
        mode=quiz.mode,
        topics=quiz.topics,
        difficulty=quiz.difficulty,
        kinds=quiz.kinds,
        size=quiz.size,
        created_at=quiz.created_at.isoformat(),
        finished_at=quiz.finished_at.isoformat() if quiz.finished_at else None,
        current=quizzes.current_position(items),
        items=[
            QuizItemRow(
                position=i.position,
                kind=i.kind,
                card_id=i.card_id,
                title=titles.get(i.card_id, i.card_id),
                state=quizzes.item_state(i),
                rating=RATING_NAMES[Rating(i.rating)] if i.rating else None,
                due=i.due_after.isoformat() if i.due_after else None,
            )
            for i in items
        ],
    )
