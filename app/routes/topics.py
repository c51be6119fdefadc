"""The topic index page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.deps import SiteDep
from app.pages import guest_cached
from app.web import templates

pages = APIRouter(prefix="/topics", tags=["pages"], include_in_schema=False)


@pages.get("", response_class=HTMLResponse)
async def topic_index(request: Request, site: SiteDep) -> Response:
    async def render() -> Response:
        return templates.TemplateResponse(request, "topics/index.html", {"topics": site.topic_counts()})

    return await guest_cached(request, ("topics",), render)
