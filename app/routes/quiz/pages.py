"""Quizzes, the pages (/quiz); the JSON API is app/routes/quiz/api.py.

A refused form comes back with what was chosen or typed and the service's message beside the
field it names (`ServiceError.field`; none: above the form).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlmodel import Session

from app.config import Settings
from app.cookie_session import flash, has_no_user_row
from app.deps import (
    ClockDep,
    CsrfChecked,
    CurrentUser,
    EngineDep,
    PersonalPagesDep,
    SessionDep,
    SettingsDep,
    SiteDep,
    Visitor,
)
from app.enums import Difficulty, QuestionKind, QuizItemState, QuizMode, RatingName
from app.models import User
from app.pages import guest_cached
from app.personal_views import personal_page
from app.routes.question_views import quiz_item_view
from app.routes.quiz.models import QuizCreate
from app.routes.quiz.views import load_item, load_quiz, start
from app.services import quiz as quizzes
from app.services import quiz_learning
from app.services.cards import cards_by_id, get_topic, ordered_topics
from app.services.errors import InvalidInput, ServiceError
from app.services.numeric import BYTE_UNITS
from app.services.scheduling import (
    RATING_NAMES,
    due_counts,
    get_progress,
    humanize_interval,
    parse_rating,
    preview_text,
)
from app.validation import Position, RowId
from app.web import templates

pages = APIRouter(prefix="/quiz", tags=["pages"], include_in_schema=False)


def _start_page(
    request: Request,
    session: Session,
    user: User,
    settings: Settings,
    *,
    now: datetime,
    form: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> HTMLResponse:
    assert user.id is not None
    topics = ordered_topics(session=session)
    recent = quizzes.recent_quizzes(session=session, user_id=user.id)
    return templates.TemplateResponse(
        request,
        "quiz/start.html",
        {
            "topics": topics,
            "counts": due_counts(session=session, user=user, settings=settings, now=now),
            "recent": recent,
            "repeats": quizzes.repeats_by_quiz(session=session, quiz_ids=[q.id for q in recent]),
            "form": form
            or {"mode": "topics", "topics": [], "difficulty": "", "size": 10, "kinds": list(quizzes.KINDS)},
            "max_size": settings.quiz_max_size,
            "errors": errors or {},
        },
        status_code=status,
    )


@pages.get("", response_class=HTMLResponse)
async def start_page(
    request: Request,
    site: SiteDep,
    settings: SettingsDep,
    engine: EngineDep,
    kept: PersonalPagesDep,
    clock: ClockDep,
    mode: QuizMode = QuizMode.TOPICS,
) -> Response:
    form = {"mode": mode, "topics": [], "difficulty": "", "size": 10, "kinds": list(quizzes.KINDS)}
    now = clock.now()
    if not has_no_user_row(request):

        def build(session: Session, user: User) -> Response:
            return _start_page(request, session, user, settings, now=now, form=form)

        return await personal_page(request, engine, kept, now, build)

    # Nothing reviewed, no quiz yet: the counts follow from the bank alone, the same for everyone
    # without a row (each gets their own CSRF token in the form).
    async def render() -> Response:
        context = {
            "topics": site.topics,
            "counts": site.fresh_visitor_counts(settings, now),
            "recent": [],
            "repeats": {},
            "form": form,
            "max_size": settings.quiz_max_size,
            "errors": {},
        }
        return templates.TemplateResponse(request, "quiz/start.html", context)

    return await guest_cached(request, ("quiz", mode, "no-row"), render, needs_no_row=True)


@pages.post("", dependencies=[CsrfChecked])
def start_form(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
    mode: Annotated[QuizMode, Form()] = QuizMode.TOPICS,
    topics: Annotated[list[str], Form()] = [],  # noqa: B006 - FastAPI copies defaults
    difficulty: Annotated[Difficulty | Literal[""], Form()] = "",
    size: Annotated[int, Form(ge=1, le=10_000)] = 10,
    kinds: Annotated[list[QuestionKind], Form()] = [],  # noqa: B006
) -> Response:
    form = {"mode": mode, "topics": topics, "difficulty": difficulty, "size": size, "kinds": kinds}
    now = clock.now()
    if not kinds:
        return _start_page(
            request,
            session,
            user,
            settings,
            now=now,
            form=form,
            errors={"kinds": "Choose at least one kind of question."},
            status=422,
        )
    body = QuizCreate(mode=mode, topics=topics, difficulty=difficulty or None, size=size, kinds=kinds)
    try:
        quiz = start(session, user, settings, body, now)
    except ServiceError as exc:
        errors = {exc.field or "form": exc.message}
        return _start_page(
            request, session, user, settings, now=now, form=form, errors=errors, status=exc.status
        )
    if quiz.size < size:
        # Fewer than asked: say why rather than leave the user to count.
        flash(
            request,
            f"This quiz has {quiz.size} question{'s' if quiz.size != 1 else ''}, not {size}: that is "
            "every card (and every distinct numeric problem) your choices match. Tick more topics or kinds.",
        )
    return RedirectResponse(f"/quiz/{quiz.id}", status_code=303)


@pages.get("/{quiz_id}", response_class=HTMLResponse)
def quiz_page(
    quiz_id: RowId, request: Request, user: Visitor, session: SessionDep, clock: ClockDep
) -> Response:
    quiz = load_quiz(session, user, quiz_id)
    items = quizzes.quiz_items(session=session, quiz=quiz)
    position = quizzes.current_position(items)
    if position is not None:
        return RedirectResponse(f"/quiz/{quiz_id}/items/{position}", status_code=303)
    cards = cards_by_id(session=session, card_ids=[i.card_id for i in items])
    now = clock.now()
    return templates.TemplateResponse(
        request,
        "quiz/summary.html",
        {
            "quiz": quiz,
            "items": items,
            "cards": cards,
            "now": now,
            "until": humanize_interval,
            "names": RATING_NAMES,
            "undo": quiz_learning.undo_offer(session=session, quiz=quiz),
        },
    )


@pages.get("/{quiz_id}/items/{position}", response_class=HTMLResponse)
def item_page(
    quiz_id: RowId,
    position: Position,
    request: Request,
    user: Visitor,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
) -> HTMLResponse:
    return _item_page(request, session, user, settings, quiz_id, position, clock.now())


def _item_page(
    request: Request,
    session: Session,
    user: User,
    settings: Settings,
    quiz_id: int,
    position: int,
    now: datetime,
    *,
    typed_value: str = "",
    error: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    """One question of a quiz; after a refused numeric answer, with the typed value and why."""
    quiz, item, card = load_item(session, user, quiz_id, position)
    assert user.id is not None
    previews: dict[str, str] = {}
    if item.kind == QuestionKind.RECALL and quizzes.item_state(item) == QuizItemState.REVEALED:
        progress = get_progress(session=session, user_id=user.id, card_id=card.id)
        previews = preview_text(progress=progress, card_id=card.id, user=user, settings=settings, now=now)
    topic = get_topic(session=session, slug=card.topic)
    return templates.TemplateResponse(
        request,
        "quiz/item.html",
        {
            "quiz": quiz,
            "item": item,
            "view": quiz_item_view(item, card),
            "card": card,
            "topic": topic,
            "previews": previews,
            "now": now,
            "until": humanize_interval,
            "byte_units": BYTE_UNITS,
            "next_position": position + 1 if position + 1 < quiz.size else None,
            "typed_value": typed_value,
            "answer_error": error,
            "undo": quiz_learning.undo_offer(session=session, quiz=quiz),
            "repeat": quiz_learning.queued_repeat(session=session, item=item),
            "repeated_from": quizzes.repeated_from(session=session, item=item),
        },
        status_code=status,
    )


@pages.post("/{quiz_id}/items/{position}/answer", dependencies=[CsrfChecked])
def answer_form(
    quiz_id: RowId,
    position: Position,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
    answer: Annotated[str, Form(max_length=quizzes.MAX_TYPED_ANSWER)] = "",
    picked: Annotated[list[int], Form()] = [],  # noqa: B006
    value: Annotated[str, Form(max_length=100)] = "",
    unit: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    _, item, _card = load_item(session, user, quiz_id, position)
    try:
        quizzes.answer_item(
            session=session, user=user, item=item, settings=settings,
            text=answer, picked=picked, value=value, unit=unit or None, now=clock.now(),
        )  # fmt: skip
    except ServiceError as exc:  # a Conflict, or NoSuchOption for a picked index the question lacks
        if isinstance(exc, InvalidInput) and item.kind == QuestionKind.NUMERIC:
            return _item_page(
                request, session, user, settings, quiz_id, position, clock.now(),
                typed_value=value, error=exc.message, status=422,
            )  # fmt: skip
        flash(request, exc.message, "error")
    return RedirectResponse(f"/quiz/{quiz_id}/items/{position}", status_code=303)


@pages.post("/{quiz_id}/items/{position}/rate", dependencies=[CsrfChecked])
def rate_form(
    quiz_id: RowId,
    position: Position,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
    rating: Annotated[RatingName, Form()],
    key_points: Annotated[list[int], Form()] = [],  # noqa: B006
) -> RedirectResponse:
    _, item, card = load_item(session, user, quiz_id, position)
    now = clock.now()
    try:
        item = quizzes.rate_item(
            session=session, user=user, item=item, rating=parse_rating(rating),
            key_points=key_points, settings=settings, now=now,
        )  # fmt: skip
    except ServiceError as exc:
        flash(request, exc.message, "error")
        return RedirectResponse(f"/quiz/{quiz_id}/items/{position}", status_code=303)
    if item.due_after is not None:
        due_in = humanize_interval(item.due_after, now)
        flash(request, f"{card.title}: {rating.capitalize()}, due again in {due_in}.")
    return RedirectResponse(f"/quiz/{quiz_id}", status_code=303)
