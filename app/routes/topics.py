"""The topic index page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.deps import SessionDep
from app.services.cards import topic_counts
from app.web import templates

pages = APIRouter(prefix="/topics", tags=["pages"], include_in_schema=False)


@pages.get("", response_class=HTMLResponse)
def topic_index(request: Request, session: SessionDep) -> HTMLResponse:
    return templates.TemplateResponse(request, "topics/index.html", {"topics": topic_counts(session=session)})
