"""Timed mock interviews, the JSON API (/api/mock); the pages are app/routes/mock/pages.py.

An interview belongs to the user who started it: anyone else gets 404 for it. The server owns
the clock (app/services/mock): after the deadline, answers get 409. A ServiceError the service
raises reaches the client through the one ServiceError handler of app/main.py.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from app.deps import (
    CatalogDep,
    ClockDep,
    CurrentUser,
    GradingDep,
    SessionDep,
    SettingsDep,
    SubmitAllowed,
    Visitor,
)
from app.routes.challenge_models import SubmissionPublic, submission_public
from app.routes.mock.models import (
    MockAnswer,
    MockCreate,
    MockReport,
    MockRubricCorrection,
    MockScore,
    MockShareLink,
    MockState,
    MockSummary,
)
from app.routes.mock.views import (
    SHARED_HEADERS,
    OwnMock,
    find_mock,
    find_shared,
    report_view,
    share_url,
    state_view,
    summary_view,
)
from app.routes.public import Public
from app.routes.refusals import refusals
from app.services import mock as mocks
from app.services.errors import Conflict, Gone, InvalidInput, NotFound, NotReady
from app.validation import RowId

router = APIRouter(prefix="/api/mock", tags=["mock interviews"])

# The state carries some keys only in some states: absent stays absent (see app/routes/question_views.py).


@router.get("", response_model=list[MockSummary])
def list_mocks(session: SessionDep, catalog: CatalogDep, user: Visitor, clock: ClockDep) -> list[MockSummary]:
    now = clock.now()
    return [
        summary_view(session, m, catalog, now) for m in mocks.history(session=session, user_id=user.id or 0)
    ]


@router.post(
    "",
    status_code=201,
    response_model=MockState,
    response_model_exclude_unset=True,
    responses=refusals(Conflict, NotReady, InvalidInput, NotFound),
)
def create_mock(
    body: MockCreate,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    user: CurrentUser,
    clock: ClockDep,
) -> MockState:
    now = clock.now()
    spec = (
        mocks.one_question(body.card, settings)
        if body.card
        else mocks.MockSpec(body.minutes, tuple(body.topics), body.difficulty, body.with_challenge)
    )
    mock = mocks.start_mock(
        session=session, user=user, spec=spec, catalog=catalog, settings=settings, now=now
    )
    return state_view(session=session, mock=mock, catalog=catalog, now=now)


@router.get("/shared/{token}", response_model=MockReport, responses=refusals(NotFound, Gone))
def api_shared_report(
    token: str, response: Response, session: SessionDep, catalog: CatalogDep, clock: ClockDep
) -> Public:
    mock = find_shared(session, token)
    response.headers.update(SHARED_HEADERS)
    return report_view(mocks.build_report(session=session, mock=mock, catalog=catalog, now=clock.now()))


@router.get("/{mock_id}", response_model=MockState, response_model_exclude_unset=True)
def get_mock_state(mock: OwnMock, session: SessionDep, catalog: CatalogDep, clock: ClockDep) -> MockState:
    now = clock.now()
    mocks.close_if_due(session=session, mock=mock, now=now)
    return state_view(session=session, mock=mock, catalog=catalog, now=now)


@router.post(
    "/{mock_id}/answers",
    response_model=MockState,
    response_model_exclude_unset=True,
    responses=refusals(Conflict, InvalidInput),
)
def post_answer(
    mock: OwnMock,
    body: MockAnswer,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    clock: ClockDep,
) -> MockState:
    now = clock.now()
    mocks.answer(
        session=session, mock=mock, position=body.position, step=body.step, settings=settings, now=now,
        text=body.text, value=body.value, unit=body.unit, picked=body.picked,
    )  # fmt: skip
    return state_view(session=session, mock=mock, catalog=catalog, now=now)


@router.post(
    "/{mock_id}/submissions",
    status_code=202,
    response_model=SubmissionPublic,
    response_model_exclude_none=True,
    responses=refusals(Conflict),
)
def post_code(
    mock: OwnMock,  # 404 for anyone else's, before the code's size and rate check
    code: SubmitAllowed,
    session: SessionDep,
    clock: ClockDep,
    grading: GradingDep,
) -> SubmissionPublic:
    """The submission's JSON, as POST /api/challenges/{slug}/submissions answers it; the size and
    rate check is the challenge pages' (one bucket: a mock interview is no way around it)."""
    now = clock.now()
    mocks.ensure_running(session=session, mock=mock, now=now)
    submission = mocks.submit_code(session=session, mock=mock, grading=grading, code=code, now=now)
    return submission_public(submission)


@router.post(
    "/{mock_id}/finish",
    response_model=MockState,
    response_model_exclude_unset=True,
    responses=refusals(Conflict),
)
def post_finish(mock: OwnMock, session: SessionDep, catalog: CatalogDep, clock: ClockDep) -> MockState:
    now = clock.now()
    mocks.finish(session=session, mock=mock, now=now)
    return state_view(session=session, mock=mock, catalog=catalog, now=now)


@router.post("/{mock_id}/score", response_model=MockReport, responses=refusals(NotFound, Conflict))
def post_score(
    mock_id: RowId,
    body: MockScore,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    user: CurrentUser,
    clock: ClockDep,
) -> Public:
    """Score the answers once the clock stops; only the questions marked `review` are scheduled
    for spaced repetition."""
    now = clock.now()
    mock = find_mock(session, user.id, mock_id)
    marks = {m.position: mocks.Mark(tuple(m.key_points), m.follow_up, m.review) for m in body.items}
    mocks.score_mock(session=session, user=user, mock=mock, marks=marks, settings=settings, now=now)
    return report_view(mocks.build_report(session=session, mock=mock, catalog=catalog, now=now))


@router.get("/{mock_id}/report", response_model=MockReport, responses=refusals(Conflict))
def get_report(mock: OwnMock, session: SessionDep, catalog: CatalogDep, clock: ClockDep) -> Public:
    now = clock.now()
    if not mocks.close_if_due(session=session, mock=mock, now=now):
        raise Conflict("The interview is still running: the report comes once the clock stops")
    return report_view(mocks.build_report(session=session, mock=mock, catalog=catalog, now=now))


@router.post(
    "/{mock_id}/rubric", response_model=MockReport, responses=refusals(NotFound, Conflict, InvalidInput)
)
def post_rubric_correction(
    mock: OwnMock, body: MockRubricCorrection, session: SessionDep, catalog: CatalogDep, clock: ClockDep
) -> Public:
    """Correct one rating of the rubric; the report with the correction, the computed rating beside it."""
    mocks.correct_signal(
        session=session, mock=mock, position=body.position, signal=body.signal, rating=body.rating
    )
    return report_view(mocks.build_report(session=session, mock=mock, catalog=catalog, now=clock.now()))


@router.post("/{mock_id}/share", response_model=MockShareLink, responses=refusals(Conflict))
def post_share(mock: OwnMock, request: Request, session: SessionDep) -> MockShareLink:
    token = mocks.share(session=session, mock=mock)
    return MockShareLink(token=token, url=share_url(request, token))


@router.delete("/{mock_id}/share", status_code=204)
def delete_share(mock: OwnMock, session: SessionDep) -> Response:
    mocks.revoke(session=session, mock=mock)
    return Response(status_code=204)
