"""Progress: the dashboard page (/progress) and its JSON (/api/progress), and the home page's due count."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field
from sqlalchemy import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.config import Settings
from app.content.catalog import Catalog
from app.cookie_session import CSRF_KEY, FLASH_KEY, csrf_token
from app.deps import (
    CatalogDep,
    ClockDep,
    EngineDep,
    PersonalPagesDep,
    SessionDep,
    SettingsDep,
    Visitor,
    visitor,
)
from app.routes.public import Number, Public, Timestamp
from app.services.personal_pages import PersonalPages, data_version, valid_until
from app.services.progress import build_dashboard, dashboard_json
from app.services.scheduling import due_counts, humanize_interval
from app.services.site import CSRF_SLOT
from app.web import templates

router = APIRouter(prefix="/api/progress", tags=["progress"])
pages = APIRouter(prefix="/progress", tags=["pages"], include_in_schema=False)


# What is due: now, today (reviews plus new cards), this week; cards never seen.
class DuePublic(Public):
    now: int
    today: int
    reviews_today: int
    new_today: int
    week: int
    unseen: int
    interview_in_days: int | None


# How well the cards of one topic are held.
class TopicMasteryPublic(Public):
    slug: str
    title: str
    cards: int
    seen: int
    due: int
    mastery: Number = Field(description="0..1")
    percent: int


class ChallengeProgress(Public):
    slug: str
    title: str
    status: str = Field(description="passed | failed | not started")
    attempts: int
    last_attempt: Timestamp | None


class ReviewRow(Public):
    card_id: str
    title: str
    rating: str
    source: str
    reviewed_at: Timestamp
    due_after: Timestamp


# The dashboard, as GET /api/progress answers it.
class DashboardPublic(Public):
    due: DuePublic
    mastery: list[TopicMasteryPublic]
    reviews_per_day: dict[str, int] = Field(description="YYYY-MM-DD -> reviews, days with any")
    streak: int
    total_reviews: int
    reviews_today: int
    challenges: list[ChallengeProgress]
    history: list[ReviewRow]


@router.get("", response_model=DashboardPublic)
def api_progress(
    user: Visitor, session: SessionDep, settings: SettingsDep, catalog: CatalogDep, clock: ClockDep
) -> dict[str, Any]:
    board = build_dashboard(session=session, user=user, settings=settings, catalog=catalog, now=clock.now())
    return dashboard_json(board)


@pages.get("", response_class=HTMLResponse)
async def progress_page(
    request: Request,
    engine: EngineDep,
    kept: PersonalPagesDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    clock: ClockDep,
) -> Response:
    # One hop to the thread pool for the session check, the data version and (on a miss) the
    # build: sync dependencies would each take a hop of their own, and queue behind each other.
    return await run_in_threadpool(_progress_page, request, engine, kept, settings, catalog, clock.now())


def _progress_page(
    request: Request, engine: Engine, kept: PersonalPages, settings: Settings, catalog: Catalog, now: datetime
) -> Response:
    with Session(engine) as session:
        user = visitor(request, session)
        # A visitor with no message waiting gets the page kept since their last write; those
        # without a user row (id 0: nothing written) share one.
        keep = user.id is not None and not request.session.get(FLASH_KEY)
        version = data_version(session, user) if keep else ()
        if keep:
            assert user.id is not None
            body = kept.get(user.id, "progress", version, now)
            if body is not None:
                if CSRF_SLOT in body:
                    body = body.replace(CSRF_SLOT, csrf_token(request).encode())
                return HTMLResponse(body)
        board = build_dashboard(session=session, user=user, settings=settings, catalog=catalog, now=now)
        context = {"board": board, "now": now, "user": user, "until": humanize_interval}
        response = templates.TemplateResponse(request, "progress/index.html", context)
        if keep and user.id is not None:
            body = bytes(response.body)
            token = request.session.get(CSRF_KEY)
            if isinstance(token, str):
                body = body.replace(token.encode(), CSRF_SLOT)
            kept.put(user.id, "progress", version, now, valid_until(session, user, now), body)
        return response


def home_due_today(request: Request, engine: Engine, settings: Settings, now: datetime) -> int:
    """Cards due today for the visitor, for the home page: reviews plus new cards.

    Runs in the thread pool off the async home page, so it opens its own session on the app's
    engine (the page needs none for a visitor without a row). Creates no guest row: a visitor
    without one has only today's new cards.
    """
    with Session(engine) as session:
        user = visitor(request, session)
        return due_counts(session=session, user=user, settings=settings, now=now).today
