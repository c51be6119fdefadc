"""The home page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlmodel import Session

from app.cookie_session import has_no_user_row
from app.deps import ClockDep, EngineDep, PersonalPagesDep, SettingsDep, SiteDep
from app.models import User
from app.pages import guest_cached
from app.personal_views import personal_page
from app.services.scheduling import due_counts
from app.web import templates

pages = APIRouter(tags=["pages"], include_in_schema=False)


@pages.get("/", response_class=HTMLResponse)
async def home(
    request: Request,
    site: SiteDep,
    settings: SettingsDep,
    engine: EngineDep,
    kept: PersonalPagesDep,
    clock: ClockDep,
) -> Response:
    def page(due: int) -> Response:
        context = {"topics": site.topic_counts(), "card_count": site.live_cards, "due": due}
        return templates.TemplateResponse(request, "home/index.html", context)

    now = clock.now()
    if not has_no_user_row(request):

        def build(session: Session, user: User) -> Response:
            return page(due_counts(session=session, user=user, settings=settings, now=now).today)

        return await personal_page(request, engine, kept, now, build)

    # A visitor without a user row has only today's new cards due: the page is the same for all.
    async def render() -> Response:
        return page(site.fresh_visitor_counts(settings, now).today)

    return await guest_cached(request, ("home", "no-row"), render, needs_no_row=True)
