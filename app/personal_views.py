"""Serving a visitor's personal pages from app/services/personal_pages.PersonalPages.

A page is kept under its URL (path and query). `PersonalPageShortcut` answers a GET from the
kept page while a check younger than RECHECK_S confirmed it, before routing and dependencies run
(no thread-pool hop, no query); otherwise the route's `personal_page` checks the session and the
data version in the database (one hop to the thread pool) and builds the page only when the
version, the clock or the session moved. `ForgetPagesOnWrite` drops a visitor's kept pages when
they write through this process, so their next page shows what they just did.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.cookie_session import (
    CSRF_KEY,
    FLASH_KEY,
    GUEST_KEY,
    GUEST_ROW_KEY,
    USER_KEY,
    csrf_token,
    guest_row_id,
    session_account,
)
from app.deps import app_clock, visitor
from app.models import Submission, User
from app.pages import KeptPageShortcut
from app.services.personal_pages import PersonalPages, data_version, valid_until
from app.services.site_content import CSRF_SLOT, fill_csrf_slots

Build = Callable[[Session, User], Response]
# Set in a request's scope when PersonalPageShortcut already asked PersonalPages.recent for it.
ASKED_KEPT = "kvprep.asked_kept_page"


def visitor_credential(request: Request) -> tuple[int, str] | None:
    """(user id, what proves it) from the signed cookie: an account's session fingerprint, a guest
    row's token; None for a visitor without a row (their pages are shared, not personal)."""
    account = session_account(request)
    if account is not None:
        return account
    row, token = guest_row_id(request), request.session.get(GUEST_KEY)
    if row and isinstance(token, str):
        return row, f"guest:{token}"
    return None


def _with_csrf(body: bytes, request: Request) -> HTMLResponse:
    return HTMLResponse(fill_csrf_slots(body, lambda: csrf_token(request)))


def page_key(scope: Scope) -> str:
    """What a personal page is kept under: its path and query string."""
    query = scope.get("query_string", b"").decode("latin-1")
    return f"{scope['path']}?{query}"


async def personal_page(
    request: Request, engine: Engine, kept: PersonalPages, now: datetime, build: Build
) -> Response:
    """The visitor's page at this URL, kept or built by `build(session, visitor)`."""
    who = visitor_credential(request)
    name = page_key(request.scope)
    if who is not None and not request.session.get(FLASH_KEY) and not request.scope.get(ASKED_KEPT):
        body = kept.recent(who[0], name, who[1], now)
        if body is not None:
            return _with_csrf(body, request)
    return await run_in_threadpool(_checked_page, request, engine, kept, name, now, build, who)


class PersonalPageShortcut(KeptPageShortcut):
    """Answer a GET for a visitor's kept personal page straight from memory, while a recent check
    confirmed it."""

    @staticmethod
    def _kept(scope: Scope) -> bytes | None:
        state = scope["app"].state
        kept: PersonalPages | None = getattr(state, "personal_pages", None)
        if kept is None or not isinstance(scope.get("session"), dict) or scope["session"].get(FLASH_KEY):
            return None
        request = Request(scope)
        who = visitor_credential(request)
        if who is None:
            return None
        body = kept.recent(who[0], page_key(scope), who[1], app_clock(request).now())
        if body is None:
            scope[ASKED_KEPT] = True  # the route asks the database, not `recent` again (it may
            return None  # have handed this request the recheck)
        return fill_csrf_slots(body, lambda: csrf_token(request))


def _checked_page(
    request: Request,
    engine: Engine,
    kept: PersonalPages,
    name: str,
    now: datetime,
    build: Build,
    who: tuple[int, str] | None,
) -> Response:
    with Session(engine) as session:
        user = visitor(request, session)  # the session check: a log-out elsewhere ends it here
        if who is not None and user.id != who[0]:
            kept.discard(who[0], name)  # the session ended: nobody may be served this page again
        keep = who is not None and user.id == who[0] and not request.session.get(FLASH_KEY)
        version: tuple[object, ...] = ()
        if keep and who is not None:
            version = data_version(session, user)
            body = kept.get(who[0], name, version, now, who[1])
            if body is not None:
                return _with_csrf(body, request)
        response = build(session, user)
        if keep and who is not None and response.status_code == 200 and isinstance(response, HTMLResponse):
            body = bytes(response.body)
            token = request.session.get(CSRF_KEY)
            if isinstance(token, str):
                body = body.replace(token.encode(), CSRF_SLOT)
            kept.put(who[0], name, version, now, valid_until(session, user, now), body, who[1])
        return response


def _user_ids(session: Any) -> set[int]:
    """The account and the guest row a raw session (scope["session"]) names."""
    if not isinstance(session, dict):
        return set()
    ids = {session.get(USER_KEY), session.get(GUEST_ROW_KEY)}
    return {i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i > 0}


class ForgetPagesOnWrite:
    """After a request that may write (anything but GET, HEAD and OPTIONS), drop the pages kept for
    the visitor it came from and the one it leaves (a sign-up merges a guest into an account).

    Dropped when the response starts (the route has committed by then, and the browser may follow
    a redirect at once, on another connection) and again when it ends (a streamed body)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        before = _user_ids(scope.get("session"))

        def forget() -> None:
            kept: PersonalPages | None = getattr(scope["app"].state, "personal_pages", None)
            if kept is not None:
                for user_id in before | _user_ids(scope.get("session")):
                    kept.forget(user_id)

        async def send_and_forget(message: Message) -> None:
            if message["type"] == "http.response.start":
                forget()
            await send(message)

        try:
            await self.app(scope, receive, send_and_forget)
        finally:
            forget()


def forget_submitter(engine: Engine, kept: PersonalPages, submission_id: str) -> None:
    """Drop the pages of a submission's author once its verdict is stored (in the grading thread)."""
    with Session(engine) as session:
        submission = session.get(Submission, submission_id)
        if submission is not None:
            kept.forget(submission.user_id)
