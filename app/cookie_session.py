"""Signed cookie sessions (not the database's): a guest token per visitor, the account, CSRF, flashes.

The cookie is Starlette's SessionMiddleware (itsdangerous-signed, HttpOnly, SameSite=Lax);
this middleware, inside it, makes sure the session holds a guest token, and gives each browser a
device cookie of its own (`kvprep_device`, random, never replaced by a log-in or a log-out). A
guest session records the device it began on; logging in or signing up takes a guest's progress
into the account only when that guest began in this browser, so a guest session cookie planted in
someone else's browser (copied, or tossed from a sibling site) brings its rows into no account of
theirs. Over HTTPS the device cookie is `__Host-`-prefixed, which no sibling subdomain and no
plain-http page can set. The cookie is signed,
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
# The device the guest session began on (the device cookie's value then).
GUEST_DEVICE_KEY = "dev"
DEVICE_COOKIE = "kvprep_device"
SECURE_DEVICE_COOKIE = "__Host-kvprep_device"
_DEVICE_SCOPE_KEY = "kvprep.device"


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


def _new_guest(session: dict[str, Any], device: str) -> str:
    token = session[GUEST_KEY] = secrets.token_urlsafe(24)
    session[GUEST_ROW_KEY] = 0  # a fresh token has no row yet: nothing to look up
    session[GUEST_DEVICE_KEY] = device
    return token


def _device_cookie_name(scope: Scope) -> str:
    settings = getattr(getattr(scope.get("app"), "state", None), "settings", None)
    return SECURE_DEVICE_COOKIE if getattr(settings, "cookies_secure", False) else DEVICE_COOKIE


def _cookie(scope: Scope, name: str) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"cookie":
            for part in value.decode("latin-1").split(";"):
                k, _, v = part.strip().partition("=")
                if k == name and v:
                    return v
    return None


class GuestSessionMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = scope.get("session") if scope["type"] == "http" else None
        if session is None:
            await self.app(scope, receive, send)
            return
        name = _device_cookie_name(scope)
        device = _cookie(scope, name)
        fresh = device is None or len(device) > 64
        if fresh:
            device = secrets.token_urlsafe(18)
        assert device is not None
        scope[_DEVICE_SCOPE_KEY] = device
        if not isinstance(session.get(GUEST_KEY), str):
            _new_guest(session, device)

        async def send_with_device(message: Any) -> None:
            if fresh and message["type"] == "http.response.start":
                secure = "; Secure" if name == SECURE_DEVICE_COOKIE else ""
                header = (
                    f"{name}={device}; Path=/; Max-Age={10 * 365 * 24 * 3600}; HttpOnly; SameSite=Lax{secure}"
                )
                message.setdefault("headers", []).append((b"set-cookie", header.encode("latin-1")))
            await send(message)

        await self.app(scope, receive, send_with_device)


def this_device(request: Request) -> str:
    """This browser's device cookie (set on this response when it came without one)."""
    device = request.scope.get(_DEVICE_SCOPE_KEY)
    return device if isinstance(device, str) else ""


def guest_token(request: Request) -> str:
    token = request.session.get(GUEST_KEY)
    if not isinstance(token, str):  # the session was cleared during this request (log in, log out)
        token = _new_guest(request.session, this_device(request))
    return token


def guest_began_here(request: Request) -> bool:
    """Whether the session's guest began in this browser: its recorded device is this one's.

    A guest session cookie copied into another browser carries the device it began on, not
    that browser's, so its rows never follow that browser's log-in into an account.
    """
    recorded = request.session.get(GUEST_DEVICE_KEY)
    device = this_device(request)
    return isinstance(recorded, str) and bool(device) and secrets.compare_digest(recorded, device)


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
