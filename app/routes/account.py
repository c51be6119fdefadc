"""The user's own account: study settings, password change, the JSON export of all their data,
and deletion.

Guests have the same page: their settings, their export, and "erase my data".
"""

from __future__ import annotations

import json
from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import Field, StrictFloat
from sqlmodel import Session

from app.config import Settings
from app.cookie_session import flash, log_out
from app.deps import ClockDep, CsrfChecked, CurrentUser, LoginLimiter, SessionDep, SettingsDep, Visitor
from app.models import ApiToken, User
from app.routes.auth import sign_in
from app.routes.public import Public, Timestamp
from app.routes.refusals import refusals
from app.services.accounts import change_password, delete_user, export_user, password_hasher
from app.services.api_tokens import list_tokens
from app.services.errors import Forbidden, InvalidInput, ServiceError
from app.services.ratelimit import RateLimiter
from app.services.scheduling import retention_for
from app.services.study_settings import (
    StudyForm,
    read_study_form,
    save_study_form,
    save_study_settings,
    study_form_for,
)
from app.validation import ApiModel, IsoDate
from app.web import templates

router = APIRouter(prefix="/api/account", tags=["account"])
pages = APIRouter(prefix="/account", tags=["pages"], include_in_schema=False)


# Study settings a user may change.
class AccountSettings(ApiModel):
    desired_retention: StrictFloat | None = Field(default=None, ge=0.7, le=0.99)
    interview_date: IsoDate | None = None


# The body of DELETE /api/account: an account confirms with its password; a guest sends {}.
class AccountDelete(ApiModel):
    password: str = Field(default="", max_length=1024)


# A new password: the current one proves it is the owner; every other session ends.
class PasswordChange(ApiModel):
    current_password: str = Field(max_length=1024)
    new_password: str = Field(max_length=1024)


# The account as GET /api/account answers it (a guest has no email).
class AccountPublic(Public):
    id: int | None
    email: str | None
    guest: bool
    created_at: Timestamp
    desired_retention: float = Field(description="the retention the scheduler aims at, 0.7..0.99")
    interview_date: str | None = Field(description="YYYY-MM-DD, or null")


def _change_password(
    request: Request,
    session: Session,
    settings: Settings,
    limiter: RateLimiter,
    user: User,
    current: str,
    new: str,
) -> None:
    """Change it and sign this browser in again; every other session (and copied cookie) ends.

    Refusals are ServiceErrors naming the field: 403 for a guest or a wrong current password,
    429 past the limit, 422 for a new password the rules refuse.
    """
    if user.is_guest:
        raise Forbidden("Guests have no password: sign up first.", "current_password")
    # Guessing the current password through this form is as limited as through the log-in form.
    limiter.check(f"password:user:{user.id}", "Too many attempts: try again in {wait} s.", "current_password")
    change_password(session=session, user=user, current=current, new=new, settings=settings)
    sign_in(request, user, settings)


def account_json(user: User, settings: Settings) -> AccountPublic:
    return AccountPublic.model_validate(
        {
            "id": user.id,
            "email": user.email,
            "guest": user.is_guest,
            "created_at": user.created_at.isoformat(),
            "desired_retention": retention_for(user, settings),
            "interview_date": user.interview_date.isoformat() if user.interview_date else None,
        }
    )


def _export_response(session: Session, user: User) -> Response:
    data = export_user(session=session, user=user)
    name = f"kvprep-export-{date.today().isoformat()}.json"
    return Response(
        json.dumps(data, indent=2),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"},
    )


def _password_ok(user: User, password: str, settings: Settings) -> bool:
    if user.is_guest or user.password_hash is None:
        return True
    return bool(password) and password_hasher(settings).verify(password, user.password_hash)


# --- JSON API -------------------------------------------------------------------------------------


@router.get("", response_model=AccountPublic)
def get_account(user: Visitor, settings: SettingsDep) -> AccountPublic:
    return account_json(user, settings)


@router.put("/settings", response_model=AccountPublic, responses=refusals(InvalidInput))
def put_settings(
    body: AccountSettings, user: CurrentUser, session: SessionDep, settings: SettingsDep
) -> AccountPublic:
    save_study_settings(
        session=session, user=user, retention=body.desired_retention, interview_date=body.interview_date
    )
    session.refresh(user)
    return account_json(user, settings)


@router.put("/password", status_code=204, responses=refusals(Forbidden, InvalidInput))
def put_password(
    body: PasswordChange,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    limiter: LoginLimiter,
) -> Response:
    _change_password(request, session, settings, limiter, user, body.current_password, body.new_password)
    return Response(status_code=204)


# The export file: the user's profile and every row of theirs, table by table.
class AccountExport(Public):
    format: Literal["kvprep-export"]
    version: int
    exported_at: Timestamp
    user: dict[str, Any] = Field(description="the profile, without the password hash")
    tables: dict[str, list[dict[str, Any]]] = Field(description="table name -> the user's rows")


# A download (Content-Disposition: attachment): the model documents the file, the Response writes it.
@router.get("/export", response_model=AccountExport)
def api_export(user: Visitor, session: SessionDep) -> Response:
    return _export_response(session, user)


@router.delete("", status_code=204, responses=refusals(Forbidden))
def api_delete(
    body: AccountDelete, request: Request, user: CurrentUser, session: SessionDep, settings: SettingsDep
) -> Response:
    if not _password_ok(user, body.password, settings):
        raise Forbidden("Wrong password")
    delete_user(session=session, user=user)
    log_out(request)
    return Response(status_code=204)


# --- HTML pages -----------------------------------------------------------------------------------


def _page(
    request: Request,
    user: User,
    settings: Settings,
    errors: dict[str, str],
    status: int,
    study: StudyForm | None = None,
    *,
    session: Session,
    new_token: tuple[ApiToken, str] | None = None,
) -> HTMLResponse:
    """The account page; `new_token` is a token just made, shown on this response only."""
    response = templates.TemplateResponse(
        request,
        "account/index.html",
        {
            "user": user,
            "tokens": [] if user.is_guest else list_tokens(session=session, user=user),
            "new_token": new_token,
            "study": study or study_form_for(user, settings),
            "study_action": "/account/settings",
            "default_percent": round(settings.desired_retention * 100),
            "errors": errors,
        },
        status_code=status,
    )
    if new_token is not None:  # a page showing a token is kept by no cache
        response.headers["Cache-Control"] = "no-store"
    return response


@pages.get("", response_class=HTMLResponse)
def account_page(request: Request, user: Visitor, settings: SettingsDep, session: SessionDep) -> HTMLResponse:
    return _page(request, user, settings, {}, 200, session=session)


@pages.post("/settings", dependencies=[CsrfChecked])
def settings_form(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
    retention: Annotated[str, Form(max_length=10)] = "",
    interview_date: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    # Today by the app's clock, as the /settings page's copy of this form reads it.
    form = read_study_form(retention, interview_date, today=clock.now().date())
    if form.errors:
        return _page(request, user, settings, form.errors, 422, study=form, session=session)
    save_study_form(session=session, user=user, form=form)
    flash(request, "Settings saved.", "success")
    return RedirectResponse("/account", status_code=303)


@pages.post("/password", dependencies=[CsrfChecked])
def password_form(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    limiter: LoginLimiter,
    current_password: Annotated[str, Form(max_length=1024)] = "",
    new_password: Annotated[str, Form(max_length=1024)] = "",
    confirm: Annotated[str, Form(max_length=1024)] = "",
) -> Response:
    if new_password != confirm:
        return _page(request, user, settings, {"confirm": "The new passwords differ."}, 422, session=session)
    try:
        _change_password(request, session, settings, limiter, user, current_password, new_password)
    except ServiceError as exc:
        return _page(
            request,
            user,
            settings,
            {exc.field or "current_password": exc.message},
            exc.status,
            session=session,
        )
    flash(request, "Password changed. Every other session of this account is logged out.", "success")
    return RedirectResponse("/account", status_code=303)


@pages.get("/export")
def export_download(user: Visitor, session: SessionDep) -> Response:
    return _export_response(session, user)


@pages.post("/delete", dependencies=[CsrfChecked])
def delete_form(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    password: Annotated[str, Form(max_length=1024)] = "",
    confirm: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    if user.is_guest and confirm.strip().lower() != "delete":
        return _page(request, user, settings, {"delete": 'Type "delete" to confirm.'}, 422, session=session)
    if not _password_ok(user, password, settings):
        return _page(request, user, settings, {"delete": "Wrong password."}, 403, session=session)
    was_guest = user.is_guest
    delete_user(session=session, user=user)
    log_out(request)
    flash(
        request,
        "Your data has been erased." if was_guest else "Your account and all of its data are deleted.",
    )
    return RedirectResponse("/", status_code=303)
