"""The home page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.deps import SessionDep
from app.services.cards import topic_counts
from app.web import templates

pages = APIRouter(tags=["pages"], include_in_schema=False)


@pages.get("/", response_class=HTMLResponse)
def home(request: Request, session: SessionDep) -> HTMLResponse:
    topics = topic_counts(session=session)
    return templates.TemplateResponse(
        request,
        "home/index.html",
        {"topics": topics, "card_count": sum(n for _, n in topics)},
    )
