"""Quizzes, the JSON API (/api/quizzes); the pages are app/routes/quiz/pages.py.

A ServiceError the service raises reaches the client through the one ServiceError handler of
app/main.py: these routes never catch it.
"""

from __future__ import annotations

from fastapi import APIRouter

from app.deps import ClockDep, CurrentUser, SessionDep, SettingsDep, Visitor
from app.routes.question_views import quiz_item_view
from app.routes.quiz.models import AnswerIn, QuizCreate, QuizItemPublic, QuizPublic, RatingIn
from app.routes.quiz.views import load_item, load_quiz, quiz_view, start
from app.routes.refusals import refusals
from app.services import quiz as quizzes
from app.services.errors import Conflict, InvalidInput, NotFound, NotReady
from app.services.scheduling import parse_rating
from app.validation import Position, RowId

router = APIRouter(prefix="/api/quizzes", tags=["quizzes"])


@router.post("", status_code=201, response_model=QuizPublic, responses=refusals(InvalidInput, NotReady))
def api_start(
    body: QuizCreate, user: CurrentUser, session: SessionDep, settings: SettingsDep, clock: ClockDep
) -> QuizPublic:
    return quiz_view(session, start(session, user, settings, body, clock.now()))


@router.get("", response_model=list[QuizPublic])
def api_list(user: Visitor, session: SessionDep) -> list[QuizPublic]:
    assert user.id is not None
    return [quiz_view(session, q) for q in quizzes.recent_quizzes(session=session, user_id=user.id, limit=50)]


@router.get("/{quiz_id}", response_model=QuizPublic, responses=refusals(NotFound))
def api_get(quiz_id: RowId, user: Visitor, session: SessionDep) -> QuizPublic:
    return quiz_view(session, load_quiz(session, user, quiz_id))


@router.get(
    "/{quiz_id}/items/{position}",
    response_model=QuizItemPublic,
    response_model_exclude_unset=True,
    responses=refusals(NotFound),
)
def api_item(quiz_id: RowId, position: Position, user: Visitor, session: SessionDep) -> QuizItemPublic:
    _, item, card = load_item(session, user, quiz_id, position)
    return quiz_item_view(item, card)


@router.post(
    "/{quiz_id}/items/{position}/answer",
    response_model=QuizItemPublic,
    response_model_exclude_unset=True,
    responses=refusals(NotFound, Conflict, InvalidInput),
)
def api_answer(
    quiz_id: RowId,
    position: Position,
    body: AnswerIn,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
) -> QuizItemPublic:
    _, item, card = load_item(session, user, quiz_id, position)
    item = quizzes.answer_item(
        session=session, user=user, item=item, settings=settings,
        text=body.answer, picked=body.picked, value=body.value, unit=body.unit, now=clock.now(),
    )  # fmt: skip
    return quiz_item_view(item, card)


@router.post(
    "/{quiz_id}/items/{position}/rate",
    response_model=QuizItemPublic,
    response_model_exclude_unset=True,
    responses=refusals(NotFound, Conflict),
)
def api_rate(
    quiz_id: RowId,
    position: Position,
    body: RatingIn,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
) -> QuizItemPublic:
    _, item, card = load_item(session, user, quiz_id, position)
    item = quizzes.rate_item(
        session=session, user=user, item=item, rating=parse_rating(body.rating),
        key_points=body.key_points, settings=settings, now=clock.now(),
    )  # fmt: skip
    return quiz_item_view(item, card)
