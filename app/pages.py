"""Pages that are the same for every guest, served from memory (services/site.GuestPages).

`guest_cached` wraps a route: the first guest's page is kept, later guests get the kept
copy. `GuestPageShortcut` answers a kept URL before routing, dependencies and the exception
layers run at all (they are most of a page's time). Both serve a kept page to any visitor
without a flash message waiting; a page kept for "a visitor without a user row" only to
such a visitor. A signed-in visitor gets the same page with the header's account links
(templates/_partials/account_nav.html, the one part of such a page that names the visitor) swapped
for theirs, and a signed-in visitor's own rendering of a shared page is kept for the guests
with the guest's links swapped back in. Middleware added after it (outer) still wraps its
answers.

What a signed-in header shows comes from the signed cookie alone (its email, its CSRF
token), as on every page that reads nothing else of the account; whether the session still
stands (log-out elsewhere, a new password) is checked against the database by every page
and request that reads or changes the account's data.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.cookie_session import (
    AUTH_KEY,
    CSRF_KEY,
    EMAIL_KEY,
    FLASH_KEY,
    GUEST_ROW_KEY,
    LOGIN_AT_KEY,
    USER_KEY,
    csrf_token,
    new_csrf_token,
)
from app.services.site_content import CSRF_SLOT, GuestPages, fill_csrf_slots
from app.web import templates

_HTML_HEADERS = [(b"content-type", b"text/html; charset=utf-8")]


_NAV_START = b'<nav class="account-nav"'
_NAV_END = b"</nav>"


def account_email(session: dict[str, Any], login_max_age_s: float) -> str | None:
    """The signed-in account's email from a raw session (scope["session"]), or None for a guest.

    The same test as cookie_session.session_account: a log-in lasts login_max_age_s.
    """
    uid, auth, at, email = (session.get(k) for k in (USER_KEY, AUTH_KEY, LOGIN_AT_KEY, EMAIL_KEY))
    if not (
        isinstance(uid, int) and isinstance(auth, str) and isinstance(at, int) and isinstance(email, str)
    ):
        return None
    if time.time() - at > login_max_age_s:
        return None
    return email


def _account_nav(app: Any, email: str | None, csrf: str) -> bytes:
    context = {"request": SimpleNamespace(app=app), "account_email": email, "account_csrf": csrf}
    return templates.get_template("_partials/account_nav.html").render(context).encode()


def _with_account_nav(body: bytes, nav: bytes) -> bytes | None:
    """`body` with its header's account links replaced by `nav`; None when it has none."""
    start = body.find(_NAV_START)
    end = body.find(_NAV_END, start) if start >= 0 else -1
    if end < 0:
        return None
    return body[:start] + nav + body[end + len(_NAV_END) :]


def _session_csrf(session: dict[str, Any]) -> str:
    """The raw session's CSRF token, minted into it when it has none."""
    token = session.get(CSRF_KEY)
    if not isinstance(token, str):
        token = session[CSRF_KEY] = new_csrf_token()
    return token


def _with_session_csrf(body: bytes, session: dict[str, Any]) -> bytes:
    return fill_csrf_slots(body, lambda: _session_csrf(session))


def _shared_page_for(app: Any, session: dict[str, Any], body: bytes) -> bytes | None:
    """A kept page (CSRF slots, a guest's header) as this visitor sees it."""
    email = account_email(session, app.state.settings.login_max_age_s)
    if email is not None:
        swapped = _with_account_nav(body, _account_nav(app, email, _session_csrf(session)))
        if swapped is None:
            return None
        body = swapped
    return _with_session_csrf(body, session)


async def guest_cached(
    request: Request,
    key: tuple[object, ...],
    render: Callable[[], Awaitable[Response]],
    *,
    needs_no_row: bool = False,
    by_url: bool = True,
) -> Response:
    """The page for `key` from the shared cache when it applies, else `render()` (kept when it can be).

    `needs_no_row`: the page is the same only for visitors without a user row (the caller checked).
    `by_url`: the key says no more than the URL, so `GuestPageShortcut` may answer it before
    routing; False for a page that also changes with the day.
    """
    pages: GuestPages = request.app.state.site.guest_pages
    session = request.session
    email = account_email(session, request.app.state.settings.login_max_age_s)
    if session.get(FLASH_KEY) or (email is not None and needs_no_row):
        return await render()
    if email is None:
        cached = pages.get(key, lambda: csrf_token(request))
        if cached is not None:
            return HTMLResponse(cached)
    else:
        kept = pages.get(key, lambda: CSRF_SLOT.decode())
        page = _shared_page_for(request.app, session, kept) if kept is not None else None
        if page is not None:
            return HTMLResponse(page)
    response = await render()
    if response.status_code == 200 and isinstance(response, HTMLResponse):
        token = request.session.get(CSRF_KEY)
        body: bytes | None = bytes(response.body)
        if email is not None and body is not None:  # kept as a guest sees it
            body = _with_account_nav(body, _account_nav(request.app, None, ""))
        if body is not None:
            url = (request.url.path, request.scope.get("query_string", b"")) if by_url else None
            pages.put(
                key, body, token if isinstance(token, str) else None,
                url=url, needs_no_row=needs_no_row,
            )  # fmt: skip
    return response


async def send_html(send: Send, body: bytes) -> None:
    """Answer 200 with a kept HTML page, straight through ASGI."""
    headers = [*_HTML_HEADERS, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class KeptPageShortcut:
    """Answer a GET straight from memory when `_kept(scope)` has the page (inside the session
    middleware, before routing, dependencies and the exception layers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = self._kept(scope) if scope["type"] == "http" and scope["method"] == "GET" else None
        if body is None:
            await self.app(scope, receive, send)
            return
        await send_html(send, body)

    @staticmethod
    def _kept(scope: Scope) -> bytes | None:
        raise NotImplementedError


class GuestPageShortcut(KeptPageShortcut):
    """Answer a GET for a kept guest page straight from memory."""

    @staticmethod
    def _kept(scope: Scope) -> bytes | None:
        session: dict[str, Any] | None = scope.get("session")
        app = scope["app"]
        site = getattr(app.state, "site", None)
        if session is None or site is None or session.get(FLASH_KEY):
            return None
        entry = site.guest_pages.by_url(scope["path"], scope.get("query_string", b""))
        if entry is None:
            return None
        needs_no_row, body = entry
        if needs_no_row and (session.get(GUEST_ROW_KEY) != 0 or session.get(USER_KEY) is not None):
            return None
        return _shared_page_for(app, session, body)
