"""What the mock interview's API and pages show of an interview: its state, summary, shared report.

The API answers these dicts through the models of app/routes/mock/models.py; the pages render
the same dicts, so a page and the JSON never disagree about what the candidate may see.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlmodel import Session

from app.content.catalog import Catalog
from app.deps import SessionDep, Visitor
from app.models import MockInterview, MockItem
from app.routes.challenge_models import submission_summary
from app.services import mock as mocks
from app.services.cards import get_card
from app.services.errors import Gone, NotFound
from app.validation import RowId

# Headers of the shared report: the token must not leak through links, nor the page into search engines.
SHARED_HEADERS = {"Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex", "Cache-Control": "no-store"}


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


def _challenge_view(
    *, session: Session, item: MockItem, catalog: Catalog, with_code: bool, view: dict[str, Any]
) -> dict[str, Any]:
    challenge = catalog.challenge(item.challenge or "")
    submissions = mocks.challenge_submissions(session=session, item=item)
    view["challenge"] = {
        "slug": item.challenge,
        "title": challenge.meta.title if challenge else item.challenge,
        "prompt": challenge.prompt_body if challenge else "",
        "entry_point": challenge.meta.entry_point if challenge else "",
        "starter_code": challenge.starter if challenge and with_code else None,
    }
    view["submissions"] = [submission_summary(s).model_dump(mode="json") for s in submissions]
    return view


def current_view(
    *, session: Session, item: MockItem, catalog: Catalog, with_code: bool = True
) -> dict[str, Any]:
    """What the candidate sees of the question being asked: never the expected answer."""
    step = mocks.phase(item)
    view: dict[str, Any] = {"position": item.position, "kind": item.kind, "step": step}
    if item.kind == "challenge":
        return _challenge_view(session=session, item=item, catalog=catalog, with_code=with_code, view=view)
    assert item.card_id is not None  # every question but the coding problem asks a card
    card = get_card(session=session, card_id=item.card_id)
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
