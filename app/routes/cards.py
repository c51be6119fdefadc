"""Cards: the JSON API (/api/cards) and the study pages (/cards)."""

from __future__ import annotations

import math
from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from sqlmodel import col, select

from app.deps import SessionDep, SettingsDep
from app.models import CardPage, CardPublic, Topic
from app.services.cards import CardFilter, get_card, list_cards, to_public, to_summary
from app.web import templates

router = APIRouter(prefix="/api/cards", tags=["cards"])
pages = APIRouter(prefix="/cards", tags=["pages"], include_in_schema=False)

DifficultyParam = Annotated[Literal["easy", "medium", "hard"] | None, Query()]
TopicParam = Annotated[str | None, Query(pattern=r"^[a-z0-9-]{1,80}$")]
SearchParam = Annotated[str | None, Query(max_length=200)]
PageParam = Annotated[int, Query(ge=1, le=10_000)]


def _check_topic(session: SessionDep, topic: str | None) -> None:
    if topic and session.get(Topic, topic) is None:
        raise RequestValidationError(
            [{"loc": ("query", "topic"), "msg": f"Unknown topic {topic!r}", "type": "value_error"}]
        )


@router.get("", response_model=CardPage)
def api_list_cards(
    session: SessionDep,
    settings: SettingsDep,
    topic: TopicParam = None,
    difficulty: DifficultyParam = None,
    q: SearchParam = None,
    page: PageParam = 1,
    page_size: Annotated[int | None, Query(ge=1, le=100)] = None,
) -> CardPage:
    _check_topic(session, topic)
    size = min(page_size or settings.page_size, settings.max_page_size)
    rows, total = list_cards(
        session=session, filters=CardFilter(topic, difficulty, q), page=page, page_size=size
    )
    return CardPage(items=[to_summary(c) for c in rows], total=total, page=page, page_size=size)


@router.get("/{card_id}", response_model=CardPublic)
def api_get_card(card_id: str, session: SessionDep) -> CardPublic:
    card = get_card(session=session, card_id=card_id)
    if card is None:
        raise HTTPException(404, "Card not found")
    return to_public(card)


@pages.get("", response_class=HTMLResponse)
def card_list_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    topic: TopicParam = None,
    difficulty: DifficultyParam = None,
    q: SearchParam = None,
    page: PageParam = 1,
) -> HTMLResponse:
    _check_topic(session, topic)
    rows, total = list_cards(
        session=session, filters=CardFilter(topic, difficulty, q), page=page, page_size=settings.page_size
    )
    topics = session.exec(select(Topic).order_by(col(Topic.position))).all()
    return templates.TemplateResponse(
        request,
        "cards/list.html",
        {
            "cards": rows,
            "total": total,
            "page": page,
            "pages": max(1, math.ceil(total / settings.page_size)),
            "topics": topics,
            "topic_titles": {t.slug: t.title for t in topics},
            "filters": {"topic": topic or "", "difficulty": difficulty or "", "q": q or ""},
            # The pager's links carry only the filters in use.
            "filter_query": urlencode(
                [(k, v) for k, v in (("q", q), ("topic", topic), ("difficulty", difficulty)) if v]
            ),
        },
    )


@pages.get("/{card_id}", response_class=HTMLResponse)
def card_page(card_id: str, request: Request, session: SessionDep) -> HTMLResponse:
    card = get_card(session=session, card_id=card_id)
    if card is None:
        raise HTTPException(404, "Card not found")
    topic = session.get(Topic, card.topic)
    return templates.TemplateResponse(request, "cards/detail.html", {"card": to_public(card), "topic": topic})
