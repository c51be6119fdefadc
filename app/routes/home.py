"""The home page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from app.cookie_session import has_no_user_row
from app.deps import ClockDep, EngineDep, SettingsDep, SiteDep
from app.pages import guest_cached
from app.routes.progress import home_due_today
from app.web import templates

pages = APIRouter(tags=["pages"], include_in_schema=False)


@pages.get("/", response_class=HTMLResponse)
async def home(
    request: Request, site: SiteDep, settings: SettingsDep, engine: EngineDep, clock: ClockDep
) -> Response:
    def page(due: int) -> Response:
        context = {"topics": site.topic_counts(), "card_count": site.live_cards, "due": due}
        return templates.TemplateResponse(request, "home/index.html", context)

    now = clock.now()
    if not has_no_user_row(request):
        return page(await run_in_threadpool(home_due_today, request, engine, settings, now))

    # A visitor without a user row has only today's new cards due: the page is the same for all.
    async def render() -> Response:
        return page(site.fresh_visitor_counts(settings, now).today)

    return await guest_cached(request, ("home", "no-row"), render, needs_no_row=True)
