"""Personal API tokens on the account page: make one (shown once, on the page that answers the
form), revoke one. HTML forms only: a token cannot make or revoke tokens (app/deps.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.cookie_session import flash
from app.deps import CsrfChecked, CurrentUser, SessionDep, SettingsDep
from app.routes.account import _page
from app.services.api_tokens import NAME_MAX_LENGTH, create_token, revoke_token
from app.services.errors import ServiceError
from app.validation import RowId

pages = APIRouter(prefix="/account/tokens", tags=["pages"], include_in_schema=False)


@pages.post("", dependencies=[CsrfChecked], response_class=HTMLResponse)
def create_token_form(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    name: Annotated[str, Form(max_length=NAME_MAX_LENGTH * 4)] = "",
) -> HTMLResponse:
    """The account page with the new token on it: the one time it is shown (never in a cookie)."""
    try:
        made = create_token(session=session, user=user, name=name, limit=settings.api_tokens_per_account)
    except ServiceError as exc:
        return _page(request, user, settings, {"token": exc.message}, exc.status, session=session)
    return _page(request, user, settings, {}, 200, session=session, new_token=made)


@pages.post("/{token_id}/revoke", dependencies=[CsrfChecked])
def revoke_token_form(token_id: RowId, request: Request, user: CurrentUser, session: SessionDep) -> Response:
    revoked = revoke_token(session=session, user=user, token_id=token_id)
    flash(request, f"Token “{revoked.name}” revoked: it no longer works anywhere.", "success")
    return RedirectResponse("/account", status_code=303)
