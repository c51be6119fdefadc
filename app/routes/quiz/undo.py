"""Undo the last rating of a quiz: POST /api/quizzes/{id}/undo (JSON) and the quiz page's Undo button.

Only the quiz's owner (anyone else gets 404, as for the quiz itself), only its last rating, and
only while nothing else has rated that card since (409 says why). app/services/quiz_learning.py
puts the card's FSRS state back exactly.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel

from app.cookie_session import flash
from app.deps import ClockDep, CsrfChecked, CurrentUser, SessionDep, SettingsDep
from app.enums import QuestionKind
from app.routes.question_views import quiz_item_view
from app.routes.quiz.models import QuizItemPublic
from app.routes.quiz.views import load_quiz  # the owner's quiz, else 404
from app.routes.refusals import refusals
from app.services import quiz_learning
from app.services.cards import get_card
from app.services.errors import Conflict, NotFound, ServiceError
from app.services.scheduling import due_counts
from app.validation import RowId

router = APIRouter(prefix="/api/quizzes", tags=["quizzes"])


# The due counts an undo changes back.
class DueNow(BaseModel):
    now: int
    today: int


# After an undo: the question as it is now (rateable, or answerable, again), the quiz's size
# (one less when the Again's repeat went too), and the due counts.
class UndoResult(BaseModel):
    item: QuizItemPublic
    size: int
    due: DueNow


pages = APIRouter(prefix="/quiz", tags=["pages"], include_in_schema=False)


@router.post("/{quiz_id}/undo", response_model_exclude_unset=True, responses=refusals(NotFound, Conflict))
def api_undo(
    quiz_id: RowId, user: CurrentUser, session: SessionDep, settings: SettingsDep, clock: ClockDep
) -> UndoResult:
    """Take back the quiz's last rating: the question as it is now (rateable again) and the due counts.
    A Conflict goes to the app's one ServiceError handler."""
    quiz = load_quiz(session, user, quiz_id)
    item = quiz_learning.undo_last_rating(session=session, quiz=quiz, now=clock.now())
    card = get_card(session=session, card_id=item.card_id)
    assert card is not None
    counts = due_counts(session=session, user=user, settings=settings, now=clock.now())
    due = DueNow(now=counts.due_now, today=counts.today)
    return UndoResult(item=quiz_item_view(item, card), size=quiz.size, due=due)


@pages.post("/{quiz_id}/undo", dependencies=[CsrfChecked])
def undo_form(quiz_id: RowId, request: Request, user: CurrentUser, session: SessionDep) -> RedirectResponse:
    quiz = load_quiz(session, user, quiz_id)
    try:
        item = quiz_learning.undo_last_rating(session=session, quiz=quiz)
    except ServiceError as exc:
        flash(request, exc.message, "error")
        return RedirectResponse(f"/quiz/{quiz_id}", status_code=303)
    card = get_card(session=session, card_id=item.card_id)
    again = "rate it again" if item.kind == QuestionKind.RECALL else "answer it again"
    flash(request, f"Rating undone: {card.title if card else item.card_id} is as it was before; {again}.")
    return RedirectResponse(f"/quiz/{quiz_id}/items/{item.position}", status_code=303)
