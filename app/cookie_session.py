"""Signed cookie sessions (not the database's): a guest token per visitor, the account, CSRF, flashes.

The cookie is Starlette's SessionMiddleware (itsdangerous-signed, HttpOnly, SameSite=Lax);
this middleware, inside it, makes sure the session holds a guest token. The cookie is signed,
not encrypted: it holds only random tokens, the account's id and email, and a fingerprint of
the password hash that stops a copied cookie once the password or the account changes.
"""

from __future__ import annotations

import secrets
import time
from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.exceptions import RequestValidationError
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from app.services.errors import Forbidden

GUEST_KEY = "guest"
# The guest's user row id, or 0 while it has none: pages skip the database for a guest without one.
GUEST_ROW_KEY = "gid"
USER_KEY = "uid"
AUTH_KEY = "auth"
EMAIL_KEY = "email"
LOGIN_AT_KEY = "at"
CSRF_KEY = "csrf"
FLASH_KEY = "flash"
CSRF_FIELD = "csrf_token"


STATIC_PREFIX = "/static/"


def is_static(scope: Scope) -> bool:
    """Static files need no session: no cookie is read, signed or set for them."""
    return str(scope.get("path", "")).startswith(STATIC_PREFIX)


class SessionCookieMiddleware(SessionMiddleware):
    """Starlette's signed-cookie sessions, skipped for static files."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_static(scope):
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _new_guest(session: dict[str, Any]) -> str:
    token = session[GUEST_KEY] = secrets.token_urlsafe(24)
    session[GUEST_ROW_KEY] = 0  # a fresh token has no row yet: nothing to look up
    return token


class GuestSessionMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            session = scope.get("session")
            if session is not None and not isinstance(session.get(GUEST_KEY), str):
                _new_guest(session)
        await self.app(scope, receive, send)


def guest_token(request: Request) -> str:
    token = request.session.get(GUEST_KEY)
    if not isinstance(token, str):  # the session was cleared during this request (log in, log out)
        token = _new_guest(request.session)
    return token


def guest_row_id(request: Request) -> int | None:
    """The guest row's id as the session remembers it: 0 for none yet, None when unknown (older cookies)."""
    value = request.session.get(GUEST_ROW_KEY)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def remember_guest_row(request: Request, user_id: int | None) -> None:
    request.session[GUEST_ROW_KEY] = user_id or 0


def has_no_user_row(request: Request) -> bool:
    """True when this visitor certainly has no user row: a guest whose session says so.

    Such a visitor's pages need no database at all (no progress, no history, nothing due but
    today's new cards).
    """
    return session_account(request) is None and guest_row_id(request) == 0


def session_account(request: Request) -> tuple[int, str] | None:
    """(user id, session fingerprint) of the signed-in account, or None for a guest.

    A log-in lasts Settings.login_max_age_s from the moment of log-in, whatever the cookie's
    own lifetime: the time is in the signed session, so a copied cookie expires too.
    """
    uid, auth, at = (request.session.get(k) for k in (USER_KEY, AUTH_KEY, LOGIN_AT_KEY))
    if not (isinstance(uid, int) and isinstance(auth, str) and isinstance(at, int)):
        return None
    if time.time() - at > request.app.state.settings.login_max_age_s:
        return None
    return uid, auth


def signed_in(session: dict[str, Any]) -> bool:
    """Whether a raw session (scope["session"]) belongs to a signed-in account."""
    return isinstance(session.get(USER_KEY), int) and isinstance(session.get(AUTH_KEY), str)


def log_in(request: Request, *, user_id: int, email: str, fingerprint: str) -> None:
    """A fresh session for the account: nothing from the guest session (tokens included) survives."""
    request.session.clear()
    request.session.update(
        {USER_KEY: user_id, AUTH_KEY: fingerprint, EMAIL_KEY: email, LOGIN_AT_KEY: int(time.time())}
    )


def log_out(request: Request) -> None:
    """Forget the account; the next request starts a new, empty guest session."""
    request.session.clear()


def signed_in_email(request: Request) -> str | None:
    """The account's email for the header, or None for a guest."""
    if session_account(request) is None:
        return None
    email = request.session.get(EMAIL_KEY)
    return email if isinstance(email, str) else None


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use; every HTML form that changes data posts it back."""
    token = request.session.get(CSRF_KEY)
    if not isinstance(token, str):
        token = request.session[CSRF_KEY] = new_csrf_token()
    return token


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_valid(request: Request, submitted: str | None) -> bool:
    expected = request.session.get(CSRF_KEY)
    return isinstance(expected, str) and bool(submitted) and secrets.compare_digest(expected, submitted or "")


async def csrf_protect(request: Request, csrf_token: Annotated[str, Form()] = "") -> None:
    """HTML forms that change data post the session's CSRF token back (JSON requests need none).

    Every such form passes here, so this is also where NUL characters in any field are refused
    (PostgreSQL cannot store them); the form is already parsed, and Starlette caches it.
    """
    if not csrf_valid(request, csrf_token):
        raise Forbidden("This form has expired or came from another site: reload the page and try again")
    for name, value in (await request.form()).multi_items():
        if isinstance(value, str) and "\x00" in value:
            raise RequestValidationError(
                [{"loc": ("body", name), "msg": "NUL characters are not allowed", "type": "value_error"}]
            )


def flash(request: Request, message: str, category: str = "info") -> None:
    """A message for the next page this visitor sees."""
    request.session[FLASH_KEY] = [
        *request.session.get(FLASH_KEY, []),
        {"message": message, "category": category},
    ]


def pop_flashes(request: Request) -> list[dict[str, Any]]:
    messages = request.session.pop(FLASH_KEY, None)
    return messages if isinstance(messages, list) else []
