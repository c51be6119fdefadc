"""Shared route dependencies as Annotated aliases, so a signature says what a route needs."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Form, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from sqlmodel import Session, select

from app.config import Settings
from app.content.catalog import Catalog
from app.db import get_session
from app.models import User
from app.services.accounts import fingerprint
from app.services.clock import SYSTEM_CLOCK, Clock
from app.sessions import USER_KEY, csrf_valid, guest_token, log_out, session_account


def app_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def app_catalog(request: Request) -> Catalog:
    return request.app.state.catalog  # type: ignore[no-any-return]


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(app_settings)]
CatalogDep = Annotated[Catalog, Depends(app_catalog)]


def find_user(request: Request, session: SessionDep) -> User | None:
    """The signed-in account, else the guest's row if it exists yet; creates nothing."""
    if request.session.get(USER_KEY) is not None:
        account = session_account(request)
        if account is not None:
            user_id, auth = account
            user = session.get(User, user_id)
            secret = request.app.state.settings.secret_key
            if (
                user is not None
                and not user.is_guest
                and hmac.compare_digest(fingerprint(user, secret), auth)
            ):
                return user
        # Logged out elsewhere, password changed, account deleted, or the log-in expired:
        # back to a fresh guest.
        log_out(request)
    token = guest_token(request)
    return session.exec(select(User).where(User.guest_token == token)).first()


def current_user(request: Request, session: SessionDep) -> User:
    """The visitor's user row: the account, or a guest row created on first need from the session token."""
    user = find_user(request, session)
    if user is None:
        user = User(guest_token=guest_token(request))
        session.add(user)
        session.commit()
        session.refresh(user)
    return user


CurrentUser = Annotated[User, Depends(current_user)]
MaybeUser = Annotated[User | None, Depends(find_user)]


async def csrf_protect(request: Request, csrf_token: Annotated[str, Form()] = "") -> None:
    """HTML forms that change data post the session's CSRF token back (JSON requests need none).

    Every such form passes here, so this is also where NUL characters in any field are refused
    (PostgreSQL cannot store them); the form is already parsed, and Starlette caches it.
    """
    if not csrf_valid(request, csrf_token):
        raise HTTPException(
            403, "This form has expired or came from another site: reload the page and try again"
        )
    for name, value in (await request.form()).multi_items():
        if isinstance(value, str) and "\x00" in value:
            raise RequestValidationError(
                [{"loc": ("body", name), "msg": "NUL characters are not allowed", "type": "value_error"}]
            )


# For `dependencies=[CsrfChecked]` on every HTML form route that changes data.
CsrfChecked = Depends(csrf_protect)


def app_clock(request: Request) -> Clock:
    """The server's clock: the system clock, or the ManualClock a test put on app.state.clock."""
    return getattr(request.app.state, "clock", SYSTEM_CLOCK)  # type: ignore[no-any-return]


ClockDep = Annotated[Clock, Depends(app_clock)]
