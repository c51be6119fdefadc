"""What the mock interview's API and pages show of an interview: its state, summary, shared report.

Each view is a model of app/routes/mock/models.py: the API answers it and the pages render it,
so a page and the JSON never disagree about what the candidate may see. The question being
asked comes from app/routes/question_views.py, like a quiz's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session
from starlette.datastructures import FormData

from app.content.catalog import Catalog
from app.deps import SessionDep, Visitor
from app.enums import MockStatus
from app.models import MockInterview, MockItem
from app.routes.mock.models import MockReport, MockState, MockSummary
from app.routes.public import Public
from app.routes.question_views import mock_question_view
from app.services import mock as mocks
from app.services.errors import Gone, NotFound
from app.validation import RowId

# Headers of the shared report: the token must not leak through links, nor the page into search engines.
SHARED_HEADERS = {"Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex", "Cache-Control": "no-store"}


async def form_data(request: Request) -> FormData:
    """The whole posted form, for fields named after each question (kp-0, fu-0, review-0, ...)."""
    return await request.form()


def marks_from_form(form: FormData, items: Sequence[MockItem]) -> dict[int, mocks.Mark]:
    """The score form's ticks per question; a box left unticked is not sent, so review is False
    unless the user asked for it."""
    marks: dict[int, mocks.Mark] = {}
    for item in items:
        points = [int(v) for v in form.getlist(f"kp-{item.position}") if isinstance(v, str) and v.isdigit()]
        marks[item.position] = mocks.Mark(
            tuple(points), bool(form.get(f"fu-{item.position}")), bool(form.get(f"review-{item.position}"))
        )
    return marks


def find_mock(session: Session, user_id: int | None, mock_id: int) -> MockInterview:
    mock = mocks.get_mock(session=session, user_id=user_id or 0, mock_id=mock_id)
    if mock is None:
        raise NotFound("Mock interview not found")
    return mock


def own_mock(mock_id: RowId, session: SessionDep, user: Visitor) -> MockInterview:
    """The interview at /{mock_id} when it is the visitor's: a visitor without a row owns none."""
    return find_mock(session, user.id, mock_id)


# The visitor's own interview named by the path; 404 for anyone else's.
OwnMock = Annotated[MockInterview, Depends(own_mock)]


def find_shared(session: Session, token: str) -> MockInterview:
    """The interview a share link names; 410 once its owner revoked the link, 404 if it never was."""
    mock = mocks.get_shared(session=session, token=token)
    if mock is None:
        if mocks.was_revoked(session=session, token=token):
            raise Gone("This link was revoked by the report's owner: ask them for a new one.")
        raise NotFound("Report not found")
    return mock


def share_url(request: Request, token: str) -> str:
    return str(request.url_for("shared_report_page", token=token))


def state_view(*, session: Session, mock: MockInterview, catalog: Catalog, now: datetime) -> MockState:
    items = mocks.mock_items(session=session, mock=mock)
    status = mocks.status(mock, now)
    current = mocks.current_item(items) if status == MockStatus.RUNNING else None
    return MockState(
        id=mock.id,
        status=status,
        minutes=mock.minutes,
        topics=mock.topics,
        difficulty=mock.difficulty,
        with_challenge=mock.with_challenge,
        started_at=mock.started_at.isoformat(),
        deadline=mock.deadline.isoformat(),
        now=now.isoformat(),
        remaining_s=mocks.remaining_seconds(mock, now),
        ended_at=mock.ended_at.isoformat() if mock.ended_at else None,
        ended_by=mock.ended_by,
        questions=len(items),
        done=sum(1 for i in items if i.done_at is not None),
        current=mock_question_view(session=session, item=current, catalog=catalog) if current else None,
        shared=mocks.active_token(mock) is not None,
    )


def summary_view(session: Session, mock: MockInterview, catalog: Catalog, now: datetime) -> MockSummary:
    score = None
    if mock.scored_at is not None:
        score = mocks.build_report(session=session, mock=mock, catalog=catalog, now=now).score
    return MockSummary(
        id=mock.id,
        status=mocks.status(mock, now),
        minutes=mock.minutes,
        topics=mock.topics,
        started_at=mock.started_at.isoformat(),
        ended_by=mock.ended_by,
        score=score,
        url=f"/mock/{mock.id}",
    )


def report_view(report: mocks.Report) -> Public:
    """An ended interview's report as the API answers it: its JSON, field for field (the model is
    written from the Report dataclass, app/routes/mock/models.py)."""
    return MockReport.model_validate(report.to_json())
