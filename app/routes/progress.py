"""Progress: the dashboard page (/progress) and its JSON (/api/progress)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.cookie_session import has_no_user_row
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
from app.models import User
from app.pages import guest_cached
from app.personal_views import personal_page
from app.routes.public import Number, Public, Timestamp
from app.services.progress import build_dashboard, dashboard_json
from app.services.scheduling import humanize_interval
from app.services.scheduling.scheduler import start_of_day
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
) -> DashboardPublic:
    board = build_dashboard(session=session, user=user, settings=settings, catalog=catalog, now=clock.now())
    return DashboardPublic.model_validate(dashboard_json(board))


@pages.get("", response_class=HTMLResponse)
async def progress_page(
    request: Request,
    engine: EngineDep,
    kept: PersonalPagesDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    clock: ClockDep,
) -> Response:
    now = clock.now()

    def build(session: Session, user: User) -> Response:
        board = build_dashboard(session=session, user=user, settings=settings, catalog=catalog, now=now)
        context = {"board": board, "now": now, "user": user, "until": humanize_interval}
        return templates.TemplateResponse(request, "progress/index.html", context)

    if not has_no_user_row(request):
        return await personal_page(request, engine, kept, now, build)

    # A visitor without a user row has an empty history: one dashboard for all of them, kept for
    # the day (the new cards it offers move at midnight), each with their own CSRF token.
    def build_rowless() -> Response:
        with Session(engine) as session:
            return build(session, visitor(request, session))

    async def render() -> Response:
        return await run_in_threadpool(build_rowless)

    day = start_of_day(now)
    return await guest_cached(request, ("progress", "no-row", day), render, needs_no_row=True, by_url=False)
