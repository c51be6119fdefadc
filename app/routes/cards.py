"""Cards: the JSON API (/api/cards) and the study pages (/cards)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar, cast
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from sqlalchemy import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.cookie_session import has_no_user_row
from app.deps import (
    ClockDep,
    EngineDep,
    PersonalPagesDep,
    SessionDep,
    SettingsDep,
    SiteDep,
)
from app.enums import Difficulty
from app.models import CardPage, CardPublic, User
from app.pages import guest_cached
from app.personal_views import personal_page
from app.routes.calculator import calculator_url
from app.routes.refusals import refusals
from app.services.card_status import NEW, CardStanding, standings
from app.services.cards import (
    CardFilter,
    Neighbours,
    get_card,
    has_topic,
    list_cards,
    neighbours,
    to_public,
    to_summary,
)
from app.services.errors import NotFound
from app.services.site_content import SiteContent
from app.web import templates

T = TypeVar("T")

router = APIRouter(prefix="/api/cards", tags=["cards"])
pages = APIRouter(prefix="/cards", tags=["pages"], include_in_schema=False)

DifficultyParam = Annotated[Difficulty | None, Query()]
# Empty is allowed: app/security.py drops an empty query value (a form's "Any"), so `topic=` is no filter.
TopicParam = Annotated[str | None, Query(pattern=r"^([a-z0-9-]{1,80})?$")]
SearchParam = Annotated[str | None, Query(max_length=200)]
PageParam = Annotated[int, Query(ge=1, le=10_000)]
# Set on the list's links to a card: the card page's Previous/Next walk that list.
FromParam = Annotated[Literal["list"] | None, Query(alias="from")]

# Where the list's kept HTML has a card's status: filled per visitor (a status is personal).
# NUL marks them: no request can put one in a page (a NUL anywhere in a query is refused, 422).
_STATUS_SLOT = "\x00status:{}\x00"
_STATUS_SLOTS = re.compile("\x00status:([a-z0-9-]{1,80})\x00")


def _unknown_topic(topic: str) -> RequestValidationError:
    """A 422 shaped like every other validation error (the OpenAPI schema's)."""
    return RequestValidationError(
        [{"loc": ("query", "topic"), "msg": f"Unknown topic {topic!r}", "type": "value_error"}]
    )


async def _list_filter(
    site: SiteDep, topic: TopicParam = None, difficulty: DifficultyParam = None, q: SearchParam = None
) -> CardFilter:
    """A list's filters from the query (a page's: the topic checked against the site's topics)."""
    if topic and site.topic(topic) is None:
        raise _unknown_topic(topic)
    return CardFilter(topic, difficulty, q)


ListFilter = Annotated[CardFilter, Depends(_list_filter)]


def _check_topic(session: SessionDep, topic: str | None) -> None:
    if topic and not has_topic(session=session, slug=topic):
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


@router.get("/{card_id}", response_model=CardPublic, responses=refusals(NotFound))
def api_get_card(card_id: str, session: SessionDep) -> CardPublic:
    card = get_card(session=session, card_id=card_id)
    if card is None:
        raise NotFound("Card not found")
    return to_public(card)


def _filter_query(filters: CardFilter, *extra: tuple[str, str | int]) -> str:
    """The filters in use as a query string (empty fields left out), then `extra`."""
    fields = (("q", filters.q), ("topic", filters.topic), ("difficulty", filters.difficulty))
    pairs = [(k, v) for k, v in fields if v]
    return urlencode([*pairs, *extra])


def _card_list_body(
    session: Session, site: SiteContent, filters: CardFilter, page: int, page_size: int
) -> Markup:
    rows, total = list_cards(session=session, filters=filters, page=page, page_size=page_size)
    html = templates.get_template("_partials/cards_list.html").render(
        cards=rows,
        total=total,
        page=page,
        pages=max(1, math.ceil(total / page_size)),
        topics=site.topics,
        topic_titles={t.slug: t.title for t in site.topics},
        filters={"topic": filters.topic or "", "difficulty": filters.difficulty or "", "q": filters.q or ""},
        # The pager's links carry only the filters in use; a card's link says it came from this list.
        filter_query=_filter_query(filters),
        card_query=_filter_query(filters, ("from", "list")),
        # The Anki export takes the topic and difficulty (a search is not a deck).
        export_query=urlencode(
            [(k, v) for k, v in (("topic", filters.topic), ("difficulty", filters.difficulty)) if v]
        ),
        status_slot=lambda card_id: _STATUS_SLOT.format(card_id),
    )
    return Markup(html)


def _status_html(standing: CardStanding) -> str:
    return templates.get_template("_partials/cards_status.html").render(standing=standing)


def _with_statuses(body: Markup, found: dict[str, CardStanding]) -> Markup:
    """The kept list with each card's status for this visitor where its slot is.

    Each distinct standing is rendered once (most of a page's cards are new, or due).
    """
    rendered: dict[CardStanding, str] = {}

    def status(match: re.Match[str]) -> str:
        standing = found.get(match[1], NEW)
        html = rendered.get(standing)
        if html is None:
            html = rendered[standing] = _status_html(standing)
        return html

    return Markup(_STATUS_SLOTS.sub(status, str(body)))


def _card_body(session: Session, site: SiteContent, card_id: str) -> tuple[str, str, Markup] | None:
    card = get_card(session=session, card_id=card_id)
    if card is None:
        return None
    html = templates.get_template("_partials/cards_detail.html").render(
        card=to_public(card),
        topic=site.topic(card.topic),
        calculator=calculator_url(list((card.data or {}).get("figures", {}))),
    )
    return card.title, card.topic, Markup(html)


def _scope_words(site: SiteContent, filters: CardFilter) -> str:
    """A list's filters in words: "topic MHA, MQA and GQA · hard · search “memory”"."""
    parts = []
    if filters.topic:
        topic = site.topic(filters.topic)
        parts.append(f"topic {topic.title if topic else filters.topic}")
    if filters.difficulty:
        parts.append(filters.difficulty)
    if filters.q:
        parts.append(f"search “{filters.q}”")
    return " · ".join(parts) or "all cards"


def _card_nav(
    session: Session, site: SiteContent, card_id: str, topic: str, listed: CardFilter | None, page_size: int
) -> Markup:
    """Previous/Next among the list the visitor came from, else among the card's topic."""
    found: Neighbours | None = None
    if listed is not None:
        found = neighbours(session=session, filters=listed, card_id=card_id)
    in_list = found is not None
    scope = listed if listed is not None and in_list else CardFilter(topic=topic)
    if found is None:
        found = neighbours(session=session, filters=scope, card_id=card_id)
    if found is None:  # a retired card is in no list
        return Markup("")
    page = found.page(page_size)
    html = templates.get_template("_partials/cards_neighbours.html").render(
        n=found,
        in_list=in_list,
        scope=_scope_words(site, scope),
        topic=site.topic(topic),
        card_query="?" + _filter_query(scope, ("from", "list")) if in_list else "",
        list_url="/cards?" + _filter_query(scope, *((("page", page),) if page > 1 else ())),
        came_from_list=listed is not None,
    )
    return Markup(html)


def _with_session(engine: Engine, make: Callable[[Session], T]) -> T:
    with Session(engine) as session:
        return make(session)


# The list and the card are the same for every visitor: rendered once per filter (or card) and
# kept for the process (the bank changes only at a restart's sync); the header stays per request,
# and so do the list's card statuses (personal): only a visitor without a user row, for whom every
# card is new, gets the whole list page from the guest cache.
@pages.get("", response_class=HTMLResponse)
async def card_list_page(
    request: Request,
    engine: EngineDep,
    kept: PersonalPagesDep,
    settings: SettingsDep,
    site: SiteDep,
    clock: ClockDep,
    filters: ListFilter,
    page: PageParam = 1,
) -> Response:
    key = ("cards", *filters.key(), page)

    async def list_body() -> Markup:
        body = site.fragments.get(key)
        if body is None:
            size = settings.page_size
            body = await run_in_threadpool(
                _with_session, engine, lambda s: _card_list_body(s, site, filters, page, size)
            )
            site.fragments.put(key, body)
        return cast(Markup, body)

    def page_with(body: Markup) -> Response:
        return templates.TemplateResponse(request, "cards/list.html", {"body": body})

    if not has_no_user_row(request):
        body = await list_body()
        now = clock.now()

        def build(session: Session, user: User) -> Response:
            ids = _STATUS_SLOTS.findall(str(body))
            found = standings(session=session, user_id=user.id or None, card_ids=ids, now=now)
            return page_with(_with_statuses(body, found))

        return await personal_page(request, engine, kept, now, build)

    async def render() -> Response:
        return page_with(_with_statuses(await list_body(), {}))

    return await guest_cached(request, (*key, "no-row"), render, needs_no_row=True)


@pages.get("/{card_id}", response_class=HTMLResponse)
async def card_page(
    card_id: str,
    request: Request,
    engine: EngineDep,
    settings: SettingsDep,
    site: SiteDep,
    filters: ListFilter,
    from_: FromParam = None,
) -> Response:
    listed = filters if from_ == "list" else None
    key = ("card", card_id)
    nav_key = ("card-nav", card_id, from_ or "", *filters.key())

    async def render() -> Response:
        found = site.fragments.get(key)
        if found is None:
            found = await run_in_threadpool(_with_session, engine, lambda s: _card_body(s, site, card_id))
            if found is None:  # unknown ids are not kept: they could push real cards out
                raise NotFound("Card not found")
            site.fragments.put(key, found)
        title, card_topic, body = cast(tuple[str, str, Markup], found)
        nav = site.fragments.get(nav_key)
        if nav is None:
            size = settings.page_size
            nav = await run_in_threadpool(
                _with_session, engine, lambda s: _card_nav(s, site, card_id, card_topic, listed, size)
            )
            site.fragments.put(nav_key, nav)
        context = {"title": title, "body": body, "nav": nav}
        return templates.TemplateResponse(request, "cards/detail.html", context)

    return await guest_cached(request, (*key, *nav_key[2:]), render)
