"""Cards: the JSON API (/api/cards) and the study pages (/cards)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar, cast
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from sqlalchemy import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.deps import SessionDep, SettingsDep, SiteDep
from app.models import CardPage, CardPublic, Topic
from app.pages import guest_cached
from app.routes.calculator import calculator_url
from app.services.cards import CardFilter, get_card, list_cards, to_public, to_summary
from app.services.site import SiteContent
from app.web import templates

T = TypeVar("T")

router = APIRouter(prefix="/api/cards", tags=["cards"])
pages = APIRouter(prefix="/cards", tags=["pages"], include_in_schema=False)

DifficultyParam = Annotated[Literal["easy", "medium", "hard"] | None, Query()]
TopicParam = Annotated[str | None, Query(pattern=r"^[a-z0-9-]{1,80}$")]
SearchParam = Annotated[str | None, Query(max_length=200)]
PageParam = Annotated[int, Query(ge=1, le=10_000)]


def _unknown_topic(topic: str) -> RequestValidationError:
    """A 422 shaped like every other validation error (the OpenAPI schema's)."""
    return RequestValidationError(
        [{"loc": ("query", "topic"), "msg": f"Unknown topic {topic!r}", "type": "value_error"}]
    )


def _check_topic(session: SessionDep, topic: str | None) -> None:
    if topic and session.get(Topic, topic) is None:
        raise _unknown_topic(topic)


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


def _card_list_body(
    session: Session, site: SiteContent, filters: CardFilter, page: int, page_size: int
) -> Markup:
    rows, total = list_cards(session=session, filters=filters, page=page, page_size=page_size)
    html = templates.get_template("cards/_list.html").render(
        cards=rows,
        total=total,
        page=page,
        pages=max(1, math.ceil(total / page_size)),
        topics=site.topics,
        topic_titles={t.slug: t.title for t in site.topics},
        filters={"topic": filters.topic or "", "difficulty": filters.difficulty or "", "q": filters.q or ""},
        # The pager's links carry only the filters in use.
        filter_query=urlencode(
            [
                (k, v)
                for k, v in (("q", filters.q), ("topic", filters.topic), ("difficulty", filters.difficulty))
                if v
            ]
        ),
    )
    return Markup(html)


def _card_body(session: Session, site: SiteContent, card_id: str) -> tuple[str, Markup] | None:
    card = get_card(session=session, card_id=card_id)
    if card is None:
        return None
    html = templates.get_template("cards/_detail.html").render(
        card=to_public(card),
        topic=site.topic(card.topic),
        calculator=calculator_url(list((card.data or {}).get("figures", {}))),
    )
    return card.title, Markup(html)


def _with_session(engine: Engine, make: Callable[[Session], T]) -> T:
    with Session(engine) as session:
        return make(session)


# The list and the card are the same for every visitor: rendered once per filter (or card) and
# kept for the process (the bank changes only at a restart's sync); the header stays per request.
@pages.get("", response_class=HTMLResponse)
async def card_list_page(
    request: Request,
    settings: SettingsDep,
    site: SiteDep,
    topic: TopicParam = None,
    difficulty: DifficultyParam = None,
    q: SearchParam = None,
    page: PageParam = 1,
) -> Response:
    if topic and site.topic(topic) is None:
        raise _unknown_topic(topic)
    key = ("cards", topic or "", difficulty or "", q or "", page)

    async def render() -> Response:
        body = site.fragments.get(key)
        if body is None:
            filters = CardFilter(topic, difficulty, q)
            size = settings.page_size
            engine = request.app.state.engine
            body = await run_in_threadpool(
                _with_session, engine, lambda s: _card_list_body(s, site, filters, page, size)
            )
            site.fragments.put(key, body)
        return templates.TemplateResponse(request, "cards/list.html", {"body": body})

    return await guest_cached(request, key, render)


@pages.get("/{card_id}", response_class=HTMLResponse)
async def card_page(card_id: str, request: Request, site: SiteDep) -> Response:
    key = ("card", card_id)

    async def render() -> Response:
        found = site.fragments.get(key)
        if found is None:
            engine = request.app.state.engine
            found = await run_in_threadpool(_with_session, engine, lambda s: _card_body(s, site, card_id))
            if found is None:  # unknown ids are not kept: they could push real cards out
                raise HTTPException(404, "Card not found")
            site.fragments.put(key, found)
        title, body = cast(tuple[str, Markup], found)
        return templates.TemplateResponse(request, "cards/detail.html", {"title": title, "body": body})

    return await guest_cached(request, key, render)
