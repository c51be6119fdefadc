"""Timed mock interviews: the pages (/mock) and the JSON API (/api/mock), shared reports included.

An interview belongs to the user who started it: anyone else gets 404 for it. Its report can
be shared read-only at /mock/shared/<token> until the owner revokes the link. The server
owns the clock (app/services/mock.py): after the deadline, answers get 409 on the API and a
flashed message on the pages.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import Field
from sqlmodel import Session, col, select
from starlette.datastructures import FormData

from app.content.catalog import Catalog
from app.cookie_session import flash
from app.deps import CatalogDep, ClockDep, CsrfChecked, CurrentUser, SessionDep, SettingsDep, Visitor
from app.models import Card, MockInterview, MockItem, Topic
from app.routes.submissions import submission_json
from app.services import mock as mocks
from app.services.numeric import BYTE_UNITS
from app.validation import MAX_ID, ApiModel, BodyPosition, EmptyIsNone, RowId
from app.web import templates

router = APIRouter(prefix="/api/mock", tags=["mock interviews"])
pages = APIRouter(prefix="/mock", tags=["pages"], include_in_schema=False)

Difficulty = Literal["easy", "medium", "hard"]
TopicSlug = Annotated[str, Field(pattern=r"^[a-z0-9-]{1,80}$")]
# Headers of the shared report: the token must not leak through links, nor the page into search engines.
SHARED_HEADERS = {"Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex", "Cache-Control": "no-store"}


# The set-up of a mock interview.
class MockCreate(ApiModel):
    minutes: int = Field(
        ge=1, le=10_000, description="15, 30, 45 or any custom length up to the server's maximum"
    )
    topics: list[TopicSlug] = Field(default_factory=list, max_length=50, description="[] means every topic")
    difficulty: Annotated[Difficulty | None, EmptyIsNone] = Field(
        default=None, description="null means mixed"
    )
    with_challenge: bool = True


# An answer to the current question (`step` "question") or to its follow-up (`step` "follow_up").
class MockAnswer(ApiModel):
    position: BodyPosition
    step: Literal["question", "follow_up"] = "question"
    text: str = Field(default="", max_length=20_000)
    value: str | None = Field(default=None, max_length=100)  # numeric problems
    unit: str | None = Field(default=None, max_length=20)
    picked: list[int] = Field(default_factory=list, max_length=20)  # multiple choice


# Code for the interview's coding problem.
class MockCode(ApiModel):
    code: str


# The user's scoring of one question: the key points covered, and whether the follow-up was.
class MockMark(ApiModel):
    position: BodyPosition
    key_points: list[int] = Field(default_factory=list, max_length=50)
    follow_up: bool = False


# The user's scoring of a whole interview.
class MockScore(ApiModel):
    items: list[MockMark] = Field(default_factory=list, max_length=100)


def find_mock(session: Session, user_id: int | None, mock_id: int) -> MockInterview:
    mock = mocks.get_mock(session=session, user_id=user_id or 0, mock_id=mock_id)
    if mock is None:
        raise HTTPException(404, "Mock interview not found")
    return mock


def _http(exc: mocks.MockError) -> HTTPException:
    return HTTPException(exc.status, exc.message)


def current_view(
    *, session: Session, item: MockItem, catalog: Catalog, with_code: bool = True
) -> dict[str, Any]:
    """What the candidate sees of the question being asked: never the expected answer."""
    step = mocks.phase(item)
    view: dict[str, Any] = {"position": item.position, "kind": item.kind, "step": step}
    if item.kind == "challenge":
        challenge = catalog.challenge(item.challenge or "")
        submissions = mocks.challenge_submissions(session=session, item=item)
        view["challenge"] = {
            "slug": item.challenge,
            "title": challenge.meta.title if challenge else item.challenge,
            "prompt": challenge.prompt_body if challenge else "",
            "entry_point": challenge.meta.entry_point if challenge else "",
            "starter_code": challenge.starter if challenge and with_code else None,
        }
        view["submissions"] = [
            {"id": s.id, "status": s.status, "verdict": s.verdict, "created_at": s.created_at.isoformat()}
            for s in submissions
        ]
        return view
    card = session.get(Card, item.card_id)
    assert card is not None
    if item.kind == "numeric":
        problem = item.payload["numeric"]
        view["question"] = problem["prompt"]
        view["numeric"] = {
            "units": problem["units"],
            "unit": problem["unit"],
            "config": problem.get("config") or {},
        }
    else:
        view["question"] = card.data["question"]
    if item.kind == "choice":
        choice = item.payload["choice"]
        view["choice"] = {
            "prompt": choice["prompt"],
            "options": [{"index": i, "text": o["text"]} for i, o in enumerate(choice["options"])],
        }
    if step == "follow_up":
        view["answer"] = item.answer
        view["follow_up"] = item.payload["follow_up"]["question"]
    return view


def state_json(*, session: Session, mock: MockInterview, catalog: Catalog, now: datetime) -> dict[str, Any]:
    items = mocks.mock_items(session=session, mock=mock)
    status = mocks.status(mock, now)
    current = mocks.current_item(items) if status == "running" else None
    return {
        "id": mock.id,
        "status": status,
        "minutes": mock.minutes,
        "topics": mock.topics,
        "difficulty": mock.difficulty,
        "with_challenge": mock.with_challenge,
        "started_at": mock.started_at.isoformat(),
        "deadline": mock.deadline.isoformat(),
        "now": now.isoformat(),
        "remaining_s": mocks.remaining_seconds(mock, now),
        "ended_at": mock.ended_at.isoformat() if mock.ended_at else None,
        "ended_by": mock.ended_by,
        "questions": len(items),
        "done": sum(1 for i in items if i.done_at is not None),
        "current": current_view(session=session, item=current, catalog=catalog) if current else None,
        "shared": mocks.active_token(mock) is not None,
    }


def summary_json(session: Session, mock: MockInterview, catalog: Catalog, now: datetime) -> dict[str, Any]:
    score = None
    if mock.scored_at is not None:
        score = mocks.build_report(session=session, mock=mock, catalog=catalog, now=now).score
    return {
        "id": mock.id,
        "status": mocks.status(mock, now),
        "minutes": mock.minutes,
        "topics": mock.topics,
        "started_at": mock.started_at.isoformat(),
        "ended_by": mock.ended_by,
        "score": score,
        "url": f"/mock/{mock.id}",
    }


def share_url(request: Request, token: str) -> str:
    return str(request.url_for("shared_report_page", token=token))


# --- JSON API -------------------------------------------------------------------------------------


@router.get("")
def list_mocks(
    session: SessionDep, catalog: CatalogDep, user: Visitor, clock: ClockDep
) -> list[dict[str, Any]]:
    now = clock.now()
    return [
        summary_json(session, m, catalog, now) for m in mocks.history(session=session, user_id=user.id or 0)
    ]


@router.post("", status_code=201)
def create_mock(
    body: MockCreate,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    user: CurrentUser,
    clock: ClockDep,
) -> dict[str, Any]:
    now = clock.now()
    spec = mocks.MockSpec(body.minutes, tuple(body.topics), body.difficulty, body.with_challenge)
    try:
        mock = mocks.start_mock(
            session=session, user=user, spec=spec, catalog=catalog, settings=settings, now=now
        )
    except mocks.MockError as exc:
        raise _http(exc) from None
    return state_json(session=session, mock=mock, catalog=catalog, now=now)


@router.get("/shared/{token}")
def api_shared_report(token: str, session: SessionDep, catalog: CatalogDep, clock: ClockDep) -> JSONResponse:
    mock = mocks.get_shared(session=session, token=token)
    if mock is None:
        if mocks.was_revoked(session=session, token=token):
            raise HTTPException(410, "This link was revoked by the report's owner: ask them for a new one.")
        raise HTTPException(404, "Report not found")
    report = mocks.build_report(session=session, mock=mock, catalog=catalog, now=clock.now())
    return JSONResponse(report.to_json(), headers=SHARED_HEADERS)


@router.get("/{mock_id}")
def get_mock_state(
    mock_id: RowId, session: SessionDep, catalog: CatalogDep, user: Visitor, clock: ClockDep
) -> dict[str, Any]:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    mocks.close_if_due(session=session, mock=mock, now=now)
    return state_json(session=session, mock=mock, catalog=catalog, now=now)


@router.post("/{mock_id}/answers")
def post_answer(
    mock_id: RowId,
    body: MockAnswer,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    user: CurrentUser,
    clock: ClockDep,
) -> dict[str, Any]:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    try:
        mocks.answer(
            session=session, mock=mock, position=body.position, step=body.step, settings=settings, now=now,
            text=body.text, value=body.value, unit=body.unit, picked=body.picked,
        )  # fmt: skip
    except mocks.MockError as exc:
        raise _http(exc) from None
    return state_json(session=session, mock=mock, catalog=catalog, now=now)


@router.post("/{mock_id}/submissions", status_code=202)
def post_code(
    mock_id: RowId,
    body: MockCode,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    user: CurrentUser,
    clock: ClockDep,
) -> JSONResponse:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    if len(body.code.encode("utf-8", "surrogatepass")) > settings.max_code_bytes:
        raise HTTPException(413, f"Code is over {settings.max_code_bytes // 1024} KiB")
    try:
        mocks.ensure_running(session=session, mock=mock, now=now)
    except mocks.MockError as exc:
        raise _http(exc) from None
    # The same bucket as the challenge pages: a mock interview is no way around the rate limit.
    wait = request.app.state.submit_limiter.hit(f"{settings.queue_name}:submit:{user.id}")
    if wait:
        raise HTTPException(429, "You are submitting too fast", headers={"Retry-After": str(wait)})
    try:
        submission = mocks.submit_code(
            session=session, mock=mock, grading=request.app.state.grading, code=body.code, now=now
        )
    except mocks.MockError as exc:
        raise _http(exc) from None
    return JSONResponse(submission_json(submission), status_code=202)


@router.post("/{mock_id}/finish")
def post_finish(
    mock_id: RowId, session: SessionDep, catalog: CatalogDep, user: CurrentUser, clock: ClockDep
) -> dict[str, Any]:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    try:
        mocks.finish(session=session, mock=mock, now=now)
    except mocks.MockError as exc:
        raise _http(exc) from None
    return state_json(session=session, mock=mock, catalog=catalog, now=now)


@router.post("/{mock_id}/score")
def post_score(
    mock_id: RowId,
    body: MockScore,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    user: CurrentUser,
    clock: ClockDep,
) -> dict[str, Any]:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    marks = {m.position: mocks.Mark(tuple(m.key_points), m.follow_up) for m in body.items}
    try:
        mocks.score_mock(session=session, user=user, mock=mock, marks=marks, settings=settings, now=now)
    except mocks.MockError as exc:
        raise _http(exc) from None
    return mocks.build_report(session=session, mock=mock, catalog=catalog, now=now).to_json()


@router.get("/{mock_id}/report")
def get_report(
    mock_id: RowId, session: SessionDep, catalog: CatalogDep, user: Visitor, clock: ClockDep
) -> dict[str, Any]:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    if not mocks.close_if_due(session=session, mock=mock, now=now):
        raise HTTPException(409, "The interview is still running: the report comes once the clock stops")
    return mocks.build_report(session=session, mock=mock, catalog=catalog, now=now).to_json()


@router.post("/{mock_id}/share")
def post_share(mock_id: RowId, request: Request, session: SessionDep, user: CurrentUser) -> dict[str, str]:
    mock = find_mock(session, user.id, mock_id)
    try:
        token = mocks.share(session=session, mock=mock)
    except mocks.MockError as exc:
        raise _http(exc) from None
    return {"token": token, "url": share_url(request, token)}


@router.delete("/{mock_id}/share", status_code=204)
def delete_share(mock_id: RowId, session: SessionDep, user: CurrentUser) -> Response:
    mocks.revoke(session=session, mock=find_mock(session, user.id, mock_id))
    return Response(status_code=204)


# --- HTML pages -----------------------------------------------------------------------------------

LENGTH_CHOICES = [str(n) for n in mocks.LENGTHS] + ["custom"]


def _setup_page(
    request: Request,
    session: Session,
    catalog: Catalog,
    user_id: int,
    now: datetime,
    *,
    form: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> HTMLResponse:
    settings = request.app.state.settings
    past = mocks.history(session=session, user_id=user_id)
    running = next((m for m in past if mocks.status(m, now) == "running"), None)
    rows = [(m, summary_json(session, m, catalog, now)) for m in past]
    topics = session.exec(select(Topic).order_by(col(Topic.position))).all()
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
    request: Request, session: SessionDep, catalog: CatalogDep, user: Visitor, clock: ClockDep
) -> HTMLResponse:
    return _setup_page(request, session, catalog, user.id or 0, clock.now())


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
        return _setup_page(request, session, catalog, user.id or 0, now, form=form, errors=errors, status=422)
    spec = mocks.MockSpec(int(text), tuple(topics), difficulty or None, bool(with_challenge))
    try:
        mock = mocks.start_mock(
            session=session, user=user, spec=spec, catalog=catalog, settings=settings, now=now
        )
    except mocks.MockError as exc:
        if exc.status == 409:
            running = mocks.running_mock(session=session, user_id=user.id or 0, now=now)
            flash(request, exc.message, "error")
            return RedirectResponse(f"/mock/{running.id}" if running else "/mock", status_code=303)
        field = (
            "topics"
            if "topic" in exc.message.lower()
            else "difficulty"
            if "difficulty" in exc.message
            else "length"
        )
        return _setup_page(
            request, session, catalog, user.id or 0, now, form=form, errors={field: exc.message}, status=422
        )
    return RedirectResponse(f"/mock/{mock.id}", status_code=303)


@pages.get("/shared/{token}", response_class=HTMLResponse, name="shared_report_page")
def shared_report_page(
    token: str, request: Request, session: SessionDep, catalog: CatalogDep, clock: ClockDep
) -> HTMLResponse:
    mock = mocks.get_shared(session=session, token=token)
    if mock is None:
        if mocks.was_revoked(session=session, token=token):
            raise HTTPException(410, "This link was revoked by the report's owner: ask them for a new one.")
        raise HTTPException(404, "Report not found")
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
    user: Visitor,
    clock: ClockDep,
) -> HTMLResponse:
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    mocks.close_if_due(session=session, mock=mock, now=now)
    status = mocks.status(mock, now)
    if status == "running":
        return _run_page(request, session, catalog, mock, now)
    report = mocks.build_report(session=session, mock=mock, catalog=catalog, now=now)
    if status == "ended":
        return templates.TemplateResponse(
            request,
            "mock/score.html",
            {"mock": mock, "report": report},
            headers={"Cache-Control": "no-store"},
        )
    token = mocks.active_token(mock)
    url = share_url(request, token) if token else None
    return templates.TemplateResponse(
        request, "mock/report.html", {"mock": mock, "report": report, "share_url": url, "shared": False}
    )


def _run_page(
    request: Request,
    session: Session,
    catalog: Catalog,
    mock: MockInterview,
    now: datetime,
    *,
    typed: str = "",
    answer_error: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    """The running interview's page; after a refused answer, with the typed text back in its box."""
    state = state_json(session=session, mock=mock, catalog=catalog, now=now)
    return templates.TemplateResponse(
        request,
        "mock/run.html",
        {
            "mock": mock,
            "state": state,
            "current": state["current"],
            "byte_units": list(BYTE_UNITS),
            "max_chars": request.app.state.settings.mock_answer_max_chars,
            "typed": typed,
            "answer_error": answer_error,
        },
        headers={"Cache-Control": "no-store"},
        status_code=status,
    )


def _back(mock_id: RowId) -> RedirectResponse:
    return RedirectResponse(f"/mock/{mock_id}", status_code=303)


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
    except mocks.MockError as exc:
        if exc.status == 422 and (text or value) and mocks.status(mock, clock.now()) == "running":
            # Refused as written (too long, or not a number): the same question again, with what was typed.
            typed = text.replace("\r\n", "\n").strip() if text else value
            return _run_page(
                request,
                session,
                catalog,
                mock,
                clock.now(),
                typed=typed,
                answer_error=exc.message,
                status=422,
            )
        flash(request, exc.message, "error")
    else:
        if mock.ended_by == "completed":
            flash(request, "That was the last question: the clock has stopped. Now score your answers.")
    return _back(mock_id)


@pages.post("/{mock_id}/finish", dependencies=[CsrfChecked])
def mock_finish_form(
    mock_id: RowId, request: Request, session: SessionDep, user: CurrentUser, clock: ClockDep
) -> RedirectResponse:
    mock = find_mock(session, user.id, mock_id)
    try:
        mocks.finish(session=session, mock=mock, now=clock.now())
        flash(request, "Interview ended. Now score your answers against the strong ones.")
    except mocks.MockError as exc:
        flash(request, exc.message, "error")
    return _back(mock_id)


async def form_data(request: Request) -> FormData:
    """The whole posted form, for fields named after each question (kp-0, fu-0, ...)."""
    return await request.form()


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
    marks: dict[int, mocks.Mark] = {}
    for item in mocks.mock_items(session=session, mock=mock):
        points = [int(v) for v in form.getlist(f"kp-{item.position}") if isinstance(v, str) and v.isdigit()]
        marks[item.position] = mocks.Mark(tuple(points), bool(form.get(f"fu-{item.position}")))
    try:
        mocks.score_mock(
            session=session,
            user=user,
            mock=mock,
            marks=marks,
            settings=settings,
            now=clock.now(),
        )
    except mocks.MockError as exc:
        flash(request, exc.message, "error")
    return _back(mock_id)


@pages.post("/{mock_id}/share", dependencies=[CsrfChecked])
def mock_share_form(
    mock_id: RowId, request: Request, session: SessionDep, user: CurrentUser
) -> RedirectResponse:
    mock = find_mock(session, user.id, mock_id)
    try:
        mocks.share(session=session, mock=mock)
        flash(
            request, "Anyone with the link below can read this report (and nothing else of yours).", "success"
        )
    except mocks.MockError as exc:
        flash(request, exc.message, "error")
    return _back(mock_id)


@pages.post("/{mock_id}/unshare", dependencies=[CsrfChecked])
def mock_unshare_form(
    mock_id: RowId, request: Request, session: SessionDep, user: CurrentUser
) -> RedirectResponse:
    mocks.revoke(session=session, mock=find_mock(session, user.id, mock_id))
    flash(
        request,
        "The link is revoked: whoever opens it is told so, and sees nothing of the report.",
        "success",
    )
    return _back(mock_id)
