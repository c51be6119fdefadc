"""Timed mock interviews, the pages (/mock), shared reports included; the API is app/routes/mock/api.py.

A report can be shared read-only at /mock/shared/<token> until the owner revokes the link. After
the deadline an answer gets a flashed message. A refused form comes back with what was typed and
the service's message beside the field it names (`ServiceError.field`; none: above the form).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlmodel import Session
from starlette.datastructures import FormData

from app.config import Settings
from app.content.catalog import Catalog
from app.cookie_session import flash
from app.deps import CatalogDep, ClockDep, CsrfChecked, CurrentUser, SessionDep, SettingsDep, Visitor
from app.enums import MockEndedBy, MockStatus
from app.models import MockInterview
from app.routes.mock.views import (
    SHARED_HEADERS,
    OwnMock,
    find_mock,
    find_shared,
    form_data,
    marks_from_form,
    share_url,
    state_view,
    summary_view,
)
from app.services import mock as mocks
from app.services.cards import ordered_topics
from app.services.errors import Conflict, InvalidInput, ServiceError
from app.services.numeric import BYTE_UNITS
from app.validation import MAX_ID, RowId
from app.web import templates

pages = APIRouter(prefix="/mock", tags=["pages"], include_in_schema=False)

LENGTH_CHOICES = [str(n) for n in mocks.LENGTHS] + ["custom"]
# The set-up form's field for a service field of the same meaning; an error naming no field goes above.
SETUP_FIELDS = {"minutes": "length", "topics": "topics", "difficulty": "difficulty"}


def _setup_page(
    request: Request,
    session: Session,
    catalog: Catalog,
    settings: Settings,
    user_id: int,
    now: datetime,
    *,
    form: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> HTMLResponse:
    past = mocks.history(session=session, user_id=user_id)
    running = next((m for m in past if mocks.status(m, now) == MockStatus.RUNNING), None)
    rows = [(m, summary_view(session, m, catalog, now)) for m in past]
    topics = ordered_topics(session=session)
    defaults = {"length": "30", "custom_minutes": "", "topics": [], "difficulty": "", "with_challenge": True}
    return templates.TemplateResponse(
        request,
        "mock/index.html",
        {
            "topics": topics,
            "history": rows,
            "running": running,
            "remaining": mocks.remaining_seconds(running, now) if running else 0,
            "form": {**defaults, **(form or {})},
            "errors": errors or {},
            "lengths": LENGTH_CHOICES,
            "max_minutes": settings.mock_max_minutes,
            # length -> questions asked with the coding problem, and without it
            "plans": {
                str(n): (
                    mocks.plan_questions(minutes=n, with_challenge=True, settings=settings),
                    mocks.plan_questions(minutes=n, with_challenge=False, settings=settings),
                )
                for n in mocks.LENGTHS
            },
            "settings": settings,
        },
        status_code=status,
    )


@pages.get("", response_class=HTMLResponse)
def mock_index_page(
    request: Request,
    session: SessionDep,
    catalog: CatalogDep,
    settings: SettingsDep,
    user: Visitor,
    clock: ClockDep,
) -> HTMLResponse:
    return _setup_page(request, session, catalog, settings, user.id or 0, clock.now())


@pages.post("", response_class=HTMLResponse, dependencies=[CsrfChecked])
def mock_create_form(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    user: CurrentUser,
    clock: ClockDep,
    length: Annotated[str, Form(max_length=10)] = "30",
    custom_minutes: Annotated[str, Form(max_length=10)] = "",
    topics: Annotated[list[str], Form(max_length=50)] = [],  # noqa: B006 - FastAPI copies defaults
    difficulty: Annotated[str, Form(max_length=10)] = "",
    with_challenge: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    now = clock.now()
    form = {
        "length": length,
        "custom_minutes": custom_minutes,
        "topics": topics,
        "difficulty": difficulty,
        "with_challenge": bool(with_challenge),
    }
    text = custom_minutes.strip() if length == "custom" else length
    if not text.isdigit() or not 1 <= int(text) <= settings.mock_max_minutes:
        errors = {
            "length": f"Choose 15, 30 or 45 minutes, or a whole number from 1 to {settings.mock_max_minutes}."
        }
        return _setup_page(
            request, session, catalog, settings, user.id or 0, now, form=form, errors=errors, status=422
        )
    spec = mocks.MockSpec(int(text), tuple(topics), difficulty or None, bool(with_challenge))
    try:
        mock = mocks.start_mock(
            session=session, user=user, spec=spec, catalog=catalog, settings=settings, now=now
        )
    except ServiceError as exc:
        if isinstance(exc, Conflict):
            running = mocks.running_mock(session=session, user_id=user.id or 0, now=now)
            flash(request, exc.message, "error")
            return RedirectResponse(f"/mock/{running.id}" if running else "/mock", status_code=303)
        errors = {SETUP_FIELDS.get(exc.field or "", "form"): exc.message}
        return _setup_page(
            request, session, catalog, settings, user.id or 0, now, form=form, errors=errors, status=422
        )
    return RedirectResponse(f"/mock/{mock.id}", status_code=303)


@pages.post("/retry", dependencies=[CsrfChecked])
def mock_retry_form(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    user: CurrentUser,
    clock: ClockDep,
    card_id: Annotated[str, Form(max_length=80)],
) -> RedirectResponse:
    """ "Try this question again" from a report's debrief: a one-question interview on that card."""
    now = clock.now()
    spec = mocks.one_question(card_id, settings)
    try:
        mock = mocks.start_mock(
            session=session, user=user, spec=spec, catalog=catalog, settings=settings, now=now
        )
    except Conflict as exc:  # another interview is running: back to it
        running = mocks.running_mock(session=session, user_id=user.id or 0, now=now)
        flash(request, exc.message, "error")
        return RedirectResponse(f"/mock/{running.id}" if running else "/mock", status_code=303)
    return RedirectResponse(f"/mock/{mock.id}", status_code=303)


@pages.get("/shared/{token}", response_class=HTMLResponse, name="shared_report_page")
def shared_report_page(
    token: str, request: Request, session: SessionDep, catalog: CatalogDep, clock: ClockDep
) -> HTMLResponse:
    mock = find_shared(session, token)
    report = mocks.build_report(session=session, mock=mock, catalog=catalog, now=clock.now())
    return templates.TemplateResponse(
        request, "mock/shared.html", {"report": report, "shared": True}, headers=SHARED_HEADERS
    )


@pages.get("/{mock_id}", response_class=HTMLResponse)
def mock_page(
    mock_id: RowId,
    request: Request,
    session: SessionDep,
    catalog: CatalogDep,
    settings: SettingsDep,
    user: Visitor,
    clock: ClockDep,
) -> HTMLResponse:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    mocks.close_if_due(session=session, mock=mock, now=now)
    status = mocks.status(mock, now)
    if status == MockStatus.RUNNING:
        return _run_page(request, session, catalog, settings, mock, now)
    report = mocks.build_report(session=session, mock=mock, catalog=catalog, now=now)
    if status == MockStatus.ENDED:
        return templates.TemplateResponse(
            request,
            "mock/score.html",
            {"mock": mock, "report": report},
            headers={"Cache-Control": "no-store"},
        )
    token = mocks.active_token(mock)
    url = share_url(request, token) if token else None
    return templates.TemplateResponse(
        request,
        "mock/report.html",
        {
            "mock": mock,
            "report": report,
            "share_url": url,
            "shared": False,
            "rating_names": mocks.RUBRIC_RATINGS,
        },
    )


def _run_page(
    request: Request,
    session: Session,
    catalog: Catalog,
    settings: Settings,
    mock: MockInterview,
    now: datetime,
    *,
    typed: str = "",
    answer_error: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    """The running interview's page; after a refused answer, with the typed text back in its box."""
    state = state_view(session=session, mock=mock, catalog=catalog, now=now)
    return templates.TemplateResponse(
        request,
        "mock/run.html",
        {
            "mock": mock,
            "state": state,
            "current": state.current,
            "byte_units": list(BYTE_UNITS),
            "max_chars": settings.mock_answer_max_chars,
            "typed": typed,
            "answer_error": answer_error,
        },
        headers={"Cache-Control": "no-store"},
        status_code=status,
    )


def _back(mock_id: int | None) -> RedirectResponse:
    return RedirectResponse(f"/mock/{mock_id}", status_code=303)


# What the finish and share forms say once done.
FINISHED = "Interview ended. Now score your answers against the strong ones."
SHARED = "Anyone with the link below can read this report (and nothing else of yours)."
UNSHARED = "The link is revoked: whoever opens it is told so, and sees nothing of the report."
CORRECTED = "Your rating is kept, marked as corrected; the computed one stays beside it."


def _act(
    request: Request,
    mock_id: int | None,
    action: Callable[[], object],
    done: str | None = None,
    category: str = "info",
) -> RedirectResponse:
    """Run a form's action, flash `done` or the service's refusal, and go back to the interview."""
    try:
        action()
    except ServiceError as exc:  # a Conflict, or NoSuchOption for a picked index the question lacks
        flash(request, exc.message, "error")
    else:
        if done:
            flash(request, done, category)
    return _back(mock_id)


@pages.post("/{mock_id}/answer", dependencies=[CsrfChecked])
def mock_answer_form(
    mock_id: RowId,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    user: CurrentUser,
    clock: ClockDep,
    catalog: CatalogDep,
    position: Annotated[int, Form(ge=0, le=MAX_ID)],
    step: Annotated[Literal["question", "follow_up"], Form()] = "question",
    # Far above the answer limit (the service's, stated on the page) so that an over-long answer
    # comes back in its box with a message rather than as a bare validation error.
    text: Annotated[str, Form(max_length=200_000)] = "",
    value: Annotated[str, Form(max_length=100)] = "",
    unit: Annotated[str, Form(max_length=20)] = "",
    picked: Annotated[list[int], Form(max_length=20)] = [],  # noqa: B006 - FastAPI copies defaults
    skip: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    mock = find_mock(session, user.id, mock_id)
    if skip:
        text, value, picked = "", "", []
    try:
        mocks.answer(
            session=session, mock=mock, position=position, step=step, settings=settings, now=clock.now(),
            text=text, value=value, unit=unit or None, picked=picked,
        )  # fmt: skip
    except ServiceError as exc:
        if (
            isinstance(exc, InvalidInput)
            and (text or value)
            and mocks.status(mock, clock.now()) == MockStatus.RUNNING
        ):
            # Refused as written (too long, or not a number): the same question again, with what was typed.
            typed = text.replace("\r\n", "\n").strip() if text else value
            return _run_page(
                request,
                session,
                catalog,
                settings,
                mock,
                clock.now(),
                typed=typed,
                answer_error=exc.message,
                status=422,
            )
        flash(request, exc.message, "error")
    else:
        if mock.ended_by == MockEndedBy.COMPLETED:
            flash(request, "That was the last question: the clock has stopped. Now score your answers.")
    return _back(mock_id)


@pages.post("/{mock_id}/finish", dependencies=[CsrfChecked])
def mock_finish_form(
    mock: OwnMock, request: Request, session: SessionDep, clock: ClockDep
) -> RedirectResponse:
    return _act(request, mock.id, lambda: mocks.finish(session=session, mock=mock, now=clock.now()), FINISHED)


@pages.post("/{mock_id}/score", dependencies=[CsrfChecked])
def mock_score_form(
    mock_id: RowId,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    user: CurrentUser,
    clock: ClockDep,
    form: Annotated[FormData, Depends(form_data)],
) -> RedirectResponse:
    mock = find_mock(session, user.id, mock_id)
    marks = marks_from_form(form, mocks.mock_items(session=session, mock=mock))
    return _act(
        request,
        mock_id,
        lambda: mocks.score_mock(
            session=session, user=user, mock=mock, marks=marks, settings=settings, now=clock.now()
        ),
    )


@pages.post("/{mock_id}/share", dependencies=[CsrfChecked])
def mock_share_form(mock: OwnMock, request: Request, session: SessionDep) -> RedirectResponse:
    return _act(request, mock.id, lambda: mocks.share(session=session, mock=mock), SHARED, "success")


@pages.post("/{mock_id}/unshare", dependencies=[CsrfChecked])
def mock_unshare_form(mock: OwnMock, request: Request, session: SessionDep) -> RedirectResponse:
    return _act(request, mock.id, lambda: mocks.revoke(session=session, mock=mock), UNSHARED, "success")


@pages.post("/{mock_id}/rubric", dependencies=[CsrfChecked])
def mock_rubric_form(
    mock: OwnMock,
    request: Request,
    session: SessionDep,
    position: Annotated[int, Form(ge=0, le=MAX_ID)],
    signal: Annotated[str, Form(max_length=20)],
    rating: Annotated[int, Form(ge=1, le=4)],
) -> RedirectResponse:
    """The candidate's own rating of one signal of one answer's rubric, kept after reload."""
    return _act(
        request,
        mock.id,
        lambda: mocks.correct_signal(
            session=session, mock=mock, position=position, signal=signal, rating=rating
        ),
        CORRECTED,
        "success",
    )
