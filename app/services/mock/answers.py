"""Answering a mock interview's questions, in order, on the clock: a card question, its follow-up,
then the coding problem's submissions (graded by the grading queue like any other)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, update
from sqlmodel import Session, col

from app.config import Settings
from app.enums import MockItemKind, MockPhase
from app.models import Card, MockInterview, MockItem, Submission
from app.services import key_point_suggestions, questions
from app.services.card_content import content
from app.services.errors import Conflict, InvalidInput
from app.services.grading import GradingQueue
from app.services.mock.deadline import _close, ensure_running
from app.services.mock.interviewer import next_prompt
from app.services.mock.interviews import MOVED_ON, current_item, mock_items, phase
from app.services.mock.mistakes import choice_prompt
from app.services.wrong_answers import bank_common_words


def answer(
    *,
    session: Session,
    mock: MockInterview,
    position: int,
    step: str,
    settings: Settings,
    now: datetime,
    text: str | None = None,
    value: str | None = None,
    unit: str | None = None,
    picked: Sequence[int] = (),
) -> MockItem:
    """Record the answer to the current question (step "question") or to its follow-up ("follow_up").

    Conflict after the deadline, or when the interview has moved past that step (another tab).
    """
    ensure_running(session=session, mock=mock, now=now)
    items = mock_items(session=session, mock=mock)
    item = current_item(items)
    if item is None or item.position != position or phase(item) != step:
        raise Conflict(MOVED_ON)
    if item.kind == MockItemKind.CHALLENGE:
        raise InvalidInput("The coding problem takes code: submit it from the editor.")
    # A browser sends each line break of a textarea as CR LF; the page counts it as one character.
    text = (text or "").replace("\r\n", "\n").strip()
    if len(text) > settings.mock_answer_max_chars:
        limit = settings.mock_answer_max_chars
        raise InvalidInput(f"An answer is limited to {limit:,} characters: this one has {len(text):,}.")

    values: dict[str, Any]
    guard: ColumnElement[bool]
    if step == MockPhase.QUESTION:
        values = {"answered_at": now}
        if item.kind == MockItemKind.NUMERIC:
            check = questions.check_numeric(item.payload["numeric"], value or "", unit)
            if (value or "").strip() and check.given is None:
                # Unreadable as a number in this question's units: asked again, never graded.
                raise InvalidInput(check.message)
            written = f"{(value or '').strip()} {unit or ''}".strip() if (value or "").strip() else ""
            values |= {
                "answer": written,
                "correct": check.correct,
                "response": {
                    "value": value or "",
                    "unit": unit,
                    "given": check.given,
                    "message": check.message if written else "No answer given.",
                },
            }
        elif item.kind == MockItemKind.CHOICE:
            question = item.payload["choice"]
            chosen = questions.check_choice(question, picked)  # NoSuchOption (422) for a made-up index
            values |= {
                "answer": questions.picked_texts(question, chosen.picked),
                "correct": chosen.correct,
                "response": {"picked": chosen.picked, "partial": chosen.partial},
            }
            values |= _probed_option(session=session, item=item, picked=chosen.picked)
        else:
            values["answer"] = text
            values |= key_point_suggestions.mock_fields(session=session, item=item, text=text)
            values |= _listened(session=session, item=item, text=text, suggested=values.get("suggested"))
        if not item.payload.get("follow_up"):
            values["done_at"] = now
        guard = col(MockItem.answered_at).is_(None)
    else:
        values = {"follow_up_answer": text, "done_at": now}
        guard = col(MockItem.answered_at).is_not(None) & col(MockItem.done_at).is_(None)
    result = session.exec(
        update(MockItem).where(col(MockItem.id) == item.id, guard).values(**values)  # type: ignore[call-overload]
    )
    if result.rowcount != 1:  # another tab got there first
        session.rollback()
        raise Conflict(MOVED_ON)
    if "done_at" in values:
        following = [i for i in items if i.position == position + 1]
        if following:
            session.exec(
                update(MockItem)  # type: ignore[call-overload]
                .where(col(MockItem.id) == following[0].id, col(MockItem.asked_at).is_(None))
                .values(asked_at=now)
            )
        else:
            _close(session=session, mock=mock, at=now, by="completed")
    session.commit()
    session.refresh(item)
    return item


def _listened(*, session: Session, item: MockItem, text: str, suggested: Any) -> dict[str, Any]:
    """The item's payload with its follow-up chosen from what this answer said (interviewer.py)."""
    card = session.get(Card, item.card_id) if item.card_id else None
    if card is None or not item.payload.get("follow_up"):
        return {}
    asked = content(card)
    got = key_point_suggestions.read(suggested, len(asked.key_points))
    covered = set(got.points) if got else set()
    prompt = next_prompt(asked, text, covered, bank_common_words(session=session))
    return {"payload": {**item.payload, "follow_up": prompt.to_json()}}


def _probed_option(*, session: Session, item: MockItem, picked: Sequence[int]) -> dict[str, Any]:
    """The item's payload with its follow-up on the option a pick missed or got wrong (mistakes.py);
    nothing for exactly the right options, which keep the follow-up drawn at set-up."""
    card = session.get(Card, item.card_id) if item.card_id else None
    if card is None or not item.payload.get("follow_up"):
        return {}
    prompt = choice_prompt(content(card), item.payload["choice"], picked)
    return {"payload": {**item.payload, "follow_up": prompt.to_json()}} if prompt else {}


def submit_code(
    *, session: Session, mock: MockInterview, grading: GradingQueue, code: str, now: datetime
) -> Submission:
    """Queue code for the interview's coding problem; it is graded like any submission."""
    ensure_running(session=session, mock=mock, now=now)
    item = current_item(mock_items(session=session, mock=mock))
    if item is None or item.kind != MockItemKind.CHALLENGE or item.challenge is None:
        raise Conflict("The coding problem comes after the questions: answer them first.")
    submission = grading.submit(session=session, user_id=mock.user_id, challenge=item.challenge, code=code)
    session.refresh(item)
    item.response = {"submissions": [*(item.response or {}).get("submissions", []), submission.id]}
    if item.answered_at is None:
        item.answered_at = now
    session.add(item)
    session.commit()
    session.refresh(submission)
    return submission
