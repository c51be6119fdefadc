"""Anki's habits in a quiz: an Again card comes back in the same quiz, and the last rating can be undone.

- Learning steps: a card rated Again is asked once more at the end of this quiz, up to
  MAX_REPEATS times per card per quiz. FSRS has the card in its (re)learning steps then, due in
  minutes, so rating it again a few questions later is the review it expects. A recall card
  comes back as it was. A missed choice or numeric question (rated Again by the check, with the
  right answer shown) comes back asked afresh, since the same options or the same problem
  would only test whether the user remembers what was just revealed: a new draw of options
  (another subset of key points and wrong answers where the card has them) or a numeric problem
  not yet asked in this quiz. A card with no new numeric problem left comes back as recall
  when the quiz asks recall questions, and not at all in a numeric-only quiz.
- Undo: the quiz's last rating is taken back. The card's FSRS state (state, step, stability,
  difficulty, due, last review, reps, lapses) is put back from the snapshot its Review row took
  (scheduling.review_card), the Review row is deleted (so the due counts, the streak and a
  later fit of personal parameters never see it), the repeat it queued is removed, and the
  question can be rated (recall) or answered (choice, numeric) again. Only the owner's quiz,
  only its last rating, and only while nothing else has rated that card since.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fsrs import Rating
from sqlmodel import Session, col, select

from app.enums import QuestionKind
from app.models import Card, CardProgress, Quiz, QuizItem, Review
from app.services import questions, scheduling
from app.services.errors import Conflict

# How many times one card comes back within one quiz: enough to see it through, never a loop.
MAX_REPEATS = 3
# Draws of a choice question's options tried for a set not yet shown in this quiz.
CHOICE_REDRAWS = 8


def _items(session: Session, quiz_id: int | None) -> list[QuizItem]:
    return list(
        session.exec(
            select(QuizItem).where(QuizItem.quiz_id == quiz_id).order_by(col(QuizItem.position))
        ).all()
    )


def _repeats_so_far(items: list[QuizItem], card_id: str) -> int:
    """How many times this card has already come back in the quiz. A quiz asks each card once
    (the repeats carry its card id), so its repeats are the items of that card with `repeat_of`."""
    return sum(1 for i in items if i.card_id == card_id and i.repeat_of is not None)


def _option_texts(payload: dict[str, Any]) -> frozenset[str]:
    return frozenset(str(o.get("text", "")) for o in payload.get("options", []))


def _fresh_question(
    session: Session, quiz: Quiz, item: QuizItem, items: list[QuizItem]
) -> tuple[str, dict[str, Any]] | None:
    """(kind, payload) for the repeat of `item`: recall as it was, choice and numeric drawn anew;
    None when nothing new can be asked within the quiz's kinds."""
    if item.kind == QuestionKind.RECALL:
        return "recall", dict(item.payload)
    card = session.get(Card, item.card_id)
    if card is None:
        return None
    # Seeded by the item, so the same miss always queues the same question (tests, retries).
    rng = random.Random(f"repeat:{item.quiz_id}:{item.id}")
    if item.kind == QuestionKind.NUMERIC:
        asked = {str(i.payload.get("prompt")) for i in items if i.kind == QuestionKind.NUMERIC}
        problem = questions.build_numeric(card, rng, asked)
        if problem is not None:
            return "numeric", problem
        return ("recall", {}) if "recall" in (quiz.kinds or []) else None
    shown = {
        _option_texts(i.payload) for i in items if i.card_id == item.card_id and i.kind == QuestionKind.CHOICE
    }
    topic_cards = questions.live_cards(session=session, topics=[card.topic])
    payload = questions.build_choice(card, topic_cards, rng)
    for _ in range(CHOICE_REDRAWS):
        if _option_texts(payload) not in shown:
            break
        payload = questions.build_choice(card, topic_cards, rng)
    return "choice", payload


def queue_repeat(*, session: Session, item: QuizItem, rating: Rating) -> QuizItem | None:
    """After a rating: an Again card is asked once more at the end of its quiz (a missed choice or
    numeric question asked afresh). Flushes, never commits."""
    if rating != Rating.Again:
        return None
    quiz = session.get(Quiz, item.quiz_id)
    if quiz is None:
        return None
    items = _items(session, quiz.id)
    if _repeats_so_far(items, item.card_id) >= MAX_REPEATS:
        return None
    question = _fresh_question(session, quiz, item, items)
    if question is None:
        return None
    kind, payload = question
    repeat = QuizItem(
        quiz_id=item.quiz_id,
        user_id=item.user_id,
        position=len(items),
        card_id=item.card_id,
        kind=QuestionKind(kind),
        payload=payload,
        repeat_of=item.id,
    )
    session.add(repeat)
    quiz.size = len(items) + 1
    quiz.finished_at = None  # one more question to go
    session.add(quiz)
    session.flush()
    return repeat


# --- undo -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UndoOffer:
    """What the Undo button names: the last rated question of the quiz."""

    position: int
    title: str
    rating: str


def _last_rated(session: Session, quiz: Quiz) -> QuizItem | None:
    rated = [i for i in _items(session, quiz.id) if i.rated_at is not None]
    return max(rated, key=lambda i: (i.rated_at, i.position)) if rated else None


def _its_review(session: Session, item: QuizItem) -> Review | None:
    return session.exec(
        select(Review).where(Review.quiz_item_id == item.id).order_by(col(Review.id).desc())
    ).first()


def _undo_blocker(session: Session, item: QuizItem, review: Review | None) -> str | None:
    """Why this rating cannot be undone; None when it can."""
    if review is None:
        return "This rating was made before undo existed, so it cannot be undone."
    newer = session.exec(
        select(Review.id).where(
            Review.user_id == review.user_id, Review.card_id == review.card_id, col(Review.id) > review.id
        )
    ).first()
    progress = scheduling.get_progress(session=session, user_id=review.user_id, card_id=review.card_id)
    if newer is not None or progress is None or progress.due != review.due_after:
        return (
            "This card has been reviewed since (in another quiz, a mock or a challenge): "
            "undo is no longer possible."
        )
    repeat = _repeat_of(session, item)
    if repeat is not None and repeat.rated_at is not None:
        return "The repeat of this card is already rated: undo that rating first."
    return None


def _repeat_of(session: Session, item: QuizItem) -> QuizItem | None:
    return session.exec(select(QuizItem).where(QuizItem.repeat_of == item.id)).first()


def queued_repeat(*, session: Session, item: QuizItem) -> QuizItem | None:
    """The repeat this item's rating queued at the end of the quiz, if any."""
    return _repeat_of(session, item) if item.rated_at is not None else None


def undo_offer(*, session: Session, quiz: Quiz) -> UndoOffer | None:
    """The Undo button's target for this quiz, or None when there is nothing that can be undone."""
    item = _last_rated(session, quiz)
    if item is None or _undo_blocker(session, item, _its_review(session, item)) is not None:
        return None
    card = session.get(Card, item.card_id)
    return UndoOffer(
        position=item.position,
        title=card.title if card else item.card_id,
        rating=scheduling.RATING_NAMES[Rating(item.rating or 1)],
    )


def undo_last_rating(*, session: Session, quiz: Quiz, now: datetime | None = None) -> QuizItem:
    """Take back the quiz's last rating, exactly. The caller has checked the quiz is the user's. Commits."""
    item = _last_rated(session, quiz)
    if item is None:
        raise Conflict("Nothing to undo: no question of this quiz is rated yet.")
    review = _its_review(session, item)
    blocker = _undo_blocker(session, item, review)
    if blocker is not None:
        raise Conflict(blocker)
    assert review is not None
    progress = scheduling.get_progress(session=session, user_id=review.user_id, card_id=review.card_id)
    assert progress is not None
    if review.before is None:  # the card's first review made its row: take the row away
        session.delete(progress)
    else:
        scheduling.restore_progress(progress, review.before)
        session.add(progress)
    repeat = _repeat_of(session, item)
    if repeat is not None:
        session.delete(repeat)
    session.delete(review)
    session.flush()
    item.rating = None
    item.rated_at = None
    item.due_after = None
    if item.kind != QuestionKind.RECALL:
        # Choice and numeric rate themselves when answered: back to unanswered.
        item.answered_at = None
        item.response = None
        item.correct = None
    session.add(item)
    quiz.size = len(_items(session, quiz.id))
    quiz.finished_at = None
    session.add(quiz)
    session.commit()
    session.refresh(item)
    return item


def progress_fields(progress: CardProgress | None) -> dict[str, Any] | None:
    """A card's FSRS state as plain values, for comparing before and after (tests, the JSON answer)."""
    if progress is None:
        return None
    return {name: getattr(progress, name) for name in scheduling.PROGRESS_FIELDS}
