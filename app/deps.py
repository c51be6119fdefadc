"""Shared route dependencies as Annotated aliases, so a signature says what a route needs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session, select

from app.config import Settings
from app.content.catalog import Catalog
from app.db import get_session
from app.models import User
from app.sessions import guest_token


def app_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def app_catalog(request: Request) -> Catalog:
    return request.app.state.catalog  # type: ignore[no-any-return]


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(app_settings)]
CatalogDep = Annotated[Catalog, Depends(app_catalog)]


def current_user(request: Request, session: SessionDep) -> User:
    """The visitor's user row: created on first need from the signed guest-session token."""
    token = guest_token(request)
    user = session.exec(select(User).where(User.guest_token == token)).first()
    if user is None:
        user = User(guest_token=token)
        session.add(user)
        session.commit()
        session.refresh(user)
    return user


CurrentUser = Annotated[User, Depends(current_user)]
