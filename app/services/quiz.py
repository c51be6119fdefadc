"""Quizzes: choose the cards, ask each as recall, multiple choice or a numeric problem, rate.

- Recall: the card's question, an optional typed answer, then the strong answer; the user
  ticks the key points they got and rates Again / Hard / Good / Easy.
- Multiple choice: some of the card's key points against distractors taken from the common
  wrong answers (the card's own first, then its topic's). A wrong pick shows why it is wrong
  and counts as Again; missing a right one is Hard; exactly the right ones is Good.
- Numeric: a problem of a kind that fits the card, generated from a real model config
  (app/services/numeric.py), checked with its unit and tolerance: right is Good, wrong is
  Again and shows the worked solution.

The questions are built and checked by app/services/questions.py, as for the mock interview;
this module chooses the cards, freezes the quiz and rates.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fsrs import Rating
from sqlalchemy import func
from sqlmodel import Session, col, select

from app.config import Settings
from app.enums import Difficulty, QuestionKind, QuizItemState, QuizMode
from app.models import Card, CardProgress, Quiz, QuizItem, User, utcnow
from app.services import choice_options, key_point_suggestions, questions, quiz_learning, scheduling
from app.services.card_content import content
from app.services.errors import Conflict, InvalidInput, NotReady
from app.services.questions import KINDS

MODES = tuple(QuizMode)
MAX_TYPED_ANSWER = 5000


@dataclass(frozen=True)
class QuizSpec:
    mode: str = "topics"
    topics: tuple[str, ...] = ()
    difficulty: str | None = None
    size: int = 10
    kinds: tuple[str, ...] = KINDS
    seed: int | None = field(default=None, compare=False)  # tests fix it; otherwise random


# --- choosing cards ------------------------------------------------------------------------------


def _pool(*, session: Session, spec: QuizSpec) -> list[Card]:
    cards = questions.live_cards(session=session, topics=spec.topics, difficulty=spec.difficulty)
    if set(spec.kinds) == {"numeric"}:
        cards = [c for c in cards if questions.fits(c, "numeric")]
    return cards


def select_cards(
    *, session: Session, user: User, spec: QuizSpec, settings: Settings, now: datetime
) -> list[Card]:
    assert user.id is not None
    positions = scheduling.topic_positions(session=session)
    if spec.mode == QuizMode.DUE:
        allowed = {c.id for c in _pool(session=session, spec=spec)}
        queue = scheduling.due_queue(
            session=session,
            user=user,
            settings=settings,
            now=now,
            topics=spec.topics,
            difficulty=spec.difficulty,
        )
        return [c for c in queue if c.id in allowed][: spec.size]

    pool = _pool(session=session, spec=spec)
    progress = {
        p.card_id: p for p in session.exec(select(CardProgress).where(CardProgress.user_id == user.id)).all()
    }
    if spec.mode == QuizMode.WEAKEST:
        scheduler = scheduling.scheduler_for(user=user, settings=settings, now=now, fuzz=False)
        horizon = scheduling.mastery_horizon_days(user, now)
        order = scheduling.weakest_topics(session=session, user=user, settings=settings, now=now)
        rank = {slug: i for i, slug in enumerate(order)}

        def held(card: Card) -> float:
            mine = progress.get(card.id)
            return scheduling.card_mastery(progress=mine, scheduler=scheduler, now=now, horizon_days=horizon)

        ordered = sorted(pool, key=lambda c: (rank.get(c.topic, len(rank)), held(c), c.title))
        return ordered[: spec.size]

    # By topic: what is due first (most overdue first), then unseen cards in study order, then the rest.
    due = sorted(
        (c for c in pool if c.id in progress and progress[c.id].due <= now), key=lambda c: progress[c.id].due
    )
    unseen = scheduling.study_order((c for c in pool if c.id not in progress), positions)
    later = sorted(
        (c for c in pool if c.id in progress and progress[c.id].due > now), key=lambda c: progress[c.id].due
    )
    return (due + unseen + later)[: spec.size]


# The kinds each card is asked as, and the questions themselves: app/services/questions.py.
assign_kinds = questions.cycle_kinds
build_choice = questions.build_choice
grade_choice = questions.grade_choice
_unquote = choice_options.wrong_form


def start_quiz(
    *, session: Session, user: User, spec: QuizSpec, settings: Settings, now: datetime | None = None
) -> Quiz:
    """Choose the cards and freeze every question; InvalidInput when nothing matches."""
    now = now or utcnow()
    assert user.id is not None
    if spec.mode not in MODES:
        raise InvalidInput(f"Unknown mode {spec.mode!r}", "mode")
    if not 1 <= spec.size <= settings.quiz_max_size:
        raise InvalidInput(f"A quiz has 1 to {settings.quiz_max_size} cards", "size")
    kinds = tuple(k for k in KINDS if k in spec.kinds)
    if not kinds or len(kinds) != len(set(spec.kinds)):
        raise InvalidInput("Choose question kinds among recall, choice and numeric", "kinds")
    spec = QuizSpec(spec.mode, spec.topics, spec.difficulty, spec.size, kinds, spec.seed)
    cards = select_cards(session=session, user=user, spec=spec, settings=settings, now=now)
    if not cards:
        if spec.mode == QuizMode.DUE:
            raise NotReady("Nothing is due right now. Start a quiz by topic, or come back later.")
        raise NotReady("No card matches those choices.")
    rng = random.Random(spec.seed if spec.seed is not None else secrets.randbits(64))
    by_topic = questions.cards_by_topic(session=session)
    planned: list[tuple[Card, str, dict[str, Any]]] = []
    prompts: set[str] = set()  # numeric problems already in this quiz: none is asked twice
    for card, kind in zip(cards, assign_kinds(cards, kinds), strict=True):
        if kind == QuestionKind.NUMERIC:
            problem = questions.build_numeric(card, rng, prompts)
            if problem is not None:
                planned.append((card, kind, problem))
                continue
            kind = next((k for k in kinds if k != QuestionKind.NUMERIC), "")
            if not kind:
                continue  # only numeric asked, and this card has no new problem left
        payload = questions.build(card=card, kind=kind, rng=rng, topic_cards=by_topic.get(card.topic, []))
        planned.append((card, kind, payload))
    quiz = Quiz(
        user_id=user.id,
        mode=QuizMode(spec.mode),
        topics=list(spec.topics),
        difficulty=None if spec.difficulty is None else Difficulty(spec.difficulty),
        kinds=list(kinds),
        size=len(planned),
        created_at=now,
    )
    session.add(quiz)
    session.flush()
    assert quiz.id is not None
    for position, (card, kind, payload) in enumerate(planned):
        session.add(
            QuizItem(
                quiz_id=quiz.id,
                user_id=user.id,
                position=position,
                card_id=card.id,
                kind=QuestionKind(kind),
                payload=payload,
            )
        )
    session.commit()
    session.refresh(quiz)
    return quiz


# --- reading quizzes, with ownership --------------------------------------------------------------


def get_quiz(*, session: Session, user_id: int, quiz_id: int) -> Quiz | None:
    """The quiz if it belongs to this user; someone else's is indistinguishable from a missing one."""
    quiz = session.get(Quiz, quiz_id)
    return quiz if quiz is not None and quiz.user_id == user_id else None


def quiz_items(*, session: Session, quiz: Quiz) -> list[QuizItem]:
    return list(
        session.exec(
            select(QuizItem).where(QuizItem.quiz_id == quiz.id).order_by(col(QuizItem.position))
        ).all()
    )


def get_item(*, session: Session, quiz: Quiz, position: int) -> QuizItem | None:
    return session.exec(
        select(QuizItem).where(QuizItem.quiz_id == quiz.id, QuizItem.position == position)
    ).first()


def repeated_from(*, session: Session, item: QuizItem) -> QuizItem | None:
    """The earlier question this one asks again, if it is a repeat."""
    return session.get(QuizItem, item.repeat_of) if item.repeat_of else None


def current_position(items: Sequence[QuizItem]) -> int | None:
    """The first question not yet rated; None once the quiz is done."""
    return next((i.position for i in items if i.rated_at is None), None)


def recent_quizzes(*, session: Session, user_id: int, limit: int = 10) -> list[Quiz]:
    return list(
        session.exec(
            select(Quiz)
            .where(Quiz.user_id == user_id)
            .order_by(col(Quiz.created_at).desc(), col(Quiz.id).desc())
            .limit(limit)
        ).all()
    )


def repeats_by_quiz(*, session: Session, quiz_ids: Sequence[int | None]) -> dict[int, int]:
    """How many of each quiz's questions ask a missed card again. A quiz's size counts its
    questions, repeats included; its cards are the size less these (it asks each card once)."""
    ids = [i for i in quiz_ids if i is not None]
    if not ids:
        return {}
    rows = session.exec(
        select(QuizItem.quiz_id, func.count())
        .where(col(QuizItem.quiz_id).in_(ids), col(QuizItem.repeat_of).is_not(None))
        .group_by(col(QuizItem.quiz_id))
    ).all()
    return {quiz_id: int(n) for quiz_id, n in rows}


# --- answering and rating --------------------------------------------------------------------------


def _rate(
    *, session: Session, user: User, item: QuizItem, rating: Rating, settings: Settings, now: datetime
) -> None:
    progress = scheduling.review_card(
        session=session,
        user=user,
        card_id=item.card_id,
        rating=rating,
        source=item.kind,
        settings=settings,
        now=now,
        quiz_item_id=item.id,
    )
    item.rating = int(rating)
    item.rated_at = now
    item.due_after = progress.due
    session.add(item)
    quiz_learning.queue_repeat(session=session, item=item, rating=rating)  # Again: asked again at the end
    quiz = session.get(Quiz, item.quiz_id)
    if quiz is not None and quiz.finished_at is None:
        session.flush()
        if current_position(quiz_items(session=session, quiz=quiz)) is None:
            quiz.finished_at = now
            session.add(quiz)


def answer_item(
    *,
    session: Session,
    user: User,
    item: QuizItem,
    settings: Settings,
    text: str | None = None,
    picked: Sequence[int] = (),
    value: str | None = None,
    unit: str | None = None,
    now: datetime | None = None,
) -> QuizItem:
    """Record an answer. Recall reveals the strong answer (rated next); choice and numeric rate themselves."""
    now = now or utcnow()
    if item.answered_at is not None:
        raise Conflict("This question is already answered")
    rating: Rating | None = None
    if item.kind == QuestionKind.RECALL:
        item.response = {"answer": (text or "").strip()[:MAX_TYPED_ANSWER]}
        # The key points the answer seems to cover, pre-ticked on the revealed page.
        item.suggested = key_point_suggestions.for_typed(
            session.get(Card, item.card_id), item.response["answer"]
        )
    elif item.kind == QuestionKind.CHOICE:
        check = questions.check_choice(item.payload, picked)  # NoSuchOption (422) for a made-up index
        rating = check.rating
        item.response = {"picked": check.picked}
        item.correct = check.correct
    elif item.kind == QuestionKind.NUMERIC:
        result = questions.check_numeric(item.payload, value or "", unit)
        if result.given is None:
            # Not a number in a unit this question takes ("about 3 gigs", a size for a count):
            # nothing is graded or revealed; the page says why and asks again.
            raise InvalidInput(result.message)
        item.response = {"value": value or "", "unit": unit, "given": result.given, "message": result.message}
        item.correct = result.correct
        rating = Rating.Good if result.correct else Rating.Again
    item.answered_at = now
    session.add(item)
    if rating is not None:
        _rate(session=session, user=user, item=item, rating=rating, settings=settings, now=now)
    session.commit()
    session.refresh(item)
    return item


def rate_item(
    *,
    session: Session,
    user: User,
    item: QuizItem,
    rating: Rating,
    settings: Settings,
    key_points: Sequence[int] = (),
    now: datetime | None = None,
) -> QuizItem:
    """Rate a revealed recall question, with the key points the user says they got."""
    now = now or utcnow()
    if item.kind != QuestionKind.RECALL:
        raise Conflict("This question rated itself when you answered it")
    if item.answered_at is None:
        raise Conflict("Reveal the strong answer before rating")
    if item.rated_at is not None:
        raise Conflict("This question is already rated")
    card = session.get(Card, item.card_id)
    n_points = len(content(card).key_points) if card else 0
    ticked = sorted({i for i in key_points if 0 <= i < n_points})
    item.response = {**(item.response or {}), "key_points": ticked}
    _rate(session=session, user=user, item=item, rating=rating, settings=settings, now=now)
    session.commit()
    session.refresh(item)
    return item


def item_state(item: QuizItem) -> QuizItemState:
    if item.rated_at is not None:
        return QuizItemState.RATED
    return QuizItemState.REVEALED if item.answered_at is not None else QuizItemState.OPEN
