"""Pages that are the same for every guest, served from memory (services/site.GuestPages).

`guest_cached` wraps a route: the first guest's page is kept, later guests get the kept
copy. `GuestPageShortcut` answers a kept URL before routing, dependencies and the exception
layers run at all (they were most of a page's time). Both serve a kept page only to a guest
who is not signed in and has no flash message waiting; a page kept for "a visitor without
a user row" only to such a visitor. Middleware added after it (outer) still wraps its answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.cookie_session import CSRF_KEY, GUEST_ROW_KEY, csrf_token, new_csrf_token, session_account, signed_in
from app.services.site import CSRF_SLOT, GuestPages

_HTML_HEADERS = [(b"content-type", b"text/html; charset=utf-8")]


async def guest_cached(
    request: Request,
    key: tuple[object, ...],
    render: Callable[[], Awaitable[Response]],
    *,
    needs_no_row: bool = False,
) -> Response:
    """The page for `key` from the guest cache when it applies, else `render()` (kept when it can be).

    `needs_no_row`: the page is the same only for visitors without a user row (the caller checked).
    """
    pages: GuestPages = request.app.state.site.guest_pages
    if not GuestPages.applies(request.session, session_account(request) is not None):
        return await render()
    cached = pages.get(key, lambda: csrf_token(request))
    if cached is not None:
        return HTMLResponse(cached)
    response = await render()
    if response.status_code == 200 and isinstance(response, HTMLResponse):
        token = request.session.get(CSRF_KEY)
        url = (request.url.path, request.scope.get("query_string", b""))
        pages.put(
            key, bytes(response.body), token if isinstance(token, str) else None,
            url=url, needs_no_row=needs_no_row,
        )  # fmt: skip
    return response


class GuestPageShortcut:
    """Answer a GET for a kept guest page straight from memory (inside the session middleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = self._kept(scope) if scope["type"] == "http" and scope["method"] == "GET" else None
        if body is None:
            await self.app(scope, receive, send)
            return
        headers = [*_HTML_HEADERS, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def _kept(scope: Scope) -> bytes | None:
        session: dict[str, Any] | None = scope.get("session")
        site = getattr(scope["app"].state, "site", None)
        if session is None or site is None or not GuestPages.applies(session, signed_in(session)):
            return None
        entry = site.guest_pages.by_url(scope["path"], scope.get("query_string", b""))
        if entry is None:
            return None
        needs_no_row, body = entry
        if needs_no_row and session.get(GUEST_ROW_KEY) != 0:
            return None
        if CSRF_SLOT in body:
            token = session.get(CSRF_KEY)
            if not isinstance(token, str):
                token = session[CSRF_KEY] = new_csrf_token()
            body = body.replace(CSRF_SLOT, token.encode())
        return body
