"""Signed guest sessions: every visitor gets a random token in a signed cookie on first request.

The cookie is Starlette's SessionMiddleware (itsdangerous-signed, HttpOnly, SameSite=Lax);
this middleware, inside it, makes sure the session holds a guest token.
"""

from __future__ import annotations

import secrets

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

GUEST_KEY = "guest"


class GuestSessionMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            session = scope.get("session")
            if session is not None and not isinstance(session.get(GUEST_KEY), str):
                session[GUEST_KEY] = secrets.token_urlsafe(24)
        await self.app(scope, receive, send)


def guest_token(request: Request) -> str:
    return str(request.session[GUEST_KEY])
