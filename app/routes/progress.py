"""Progress: the dashboard page (/progress) and its JSON (/api/progress), and the home page's due count."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlmodel import Session

from app.deps import CatalogDep, ClockDep, SessionDep, SettingsDep, Visitor, app_clock, find_user
from app.models import User
from app.services.progress import build_dashboard, dashboard_json
from app.services.scheduling import due_counts, humanize_interval
from app.web import templates

router = APIRouter(prefix="/api/progress", tags=["progress"])
pages = APIRouter(prefix="/progress", tags=["pages"], include_in_schema=False)


@router.get("")
def api_progress(
    user: Visitor, session: SessionDep, settings: SettingsDep, catalog: CatalogDep, clock: ClockDep
) -> dict[str, Any]:
    board = build_dashboard(session=session, user=user, settings=settings, catalog=catalog, now=clock.now())
    return dashboard_json(board)


@pages.get("", response_class=HTMLResponse)
def progress_page(
    request: Request,
    user: Visitor,
    session: SessionDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    clock: ClockDep,
) -> HTMLResponse:
    now = clock.now()
    board = build_dashboard(session=session, user=user, settings=settings, catalog=catalog, now=now)
    return templates.TemplateResponse(
        request, "progress/index.html", {"board": board, "now": now, "user": user, "until": humanize_interval}
    )


def home_due_today(request: Request) -> int:
    """Cards due today for the visitor, for the home page: reviews plus new cards.

    Creates no guest row: a visitor without one has only today's new cards.
    """
    settings = request.app.state.settings
    with Session(request.app.state.engine) as session:
        user = find_user(request, session) or User(id=0)
        return due_counts(session=session, user=user, settings=settings, now=app_clock(request).now()).today
