"""Sign up, log in, log out: HTML forms (/auth, with CSRF tokens) and the JSON API (/api/auth).

Log-in attempts are rate-limited per email and client address together, per client address,
and (more slowly) per email. Whoever is signed in, a
guest's progress moves to the account on sign-up (the guest's row becomes the account) and
on log-in (merged into it), when that guest began in this browser (app/cookie_session.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import Field
from sqlmodel import Session

from app.config import Settings
from app.cookie_session import flash, guest_began_here, log_in, log_out
from app.deps import (
    CsrfChecked,
    LoginEmailLimiter,
    LoginIpLimiter,
    LoginLimiter,
    MaybeUser,
    SessionDep,
    SettingsDep,
    SignupLimiter,
    find_user,
)
from app.models import User
from app.routes.public import Public
from app.routes.refusals import refusals
from app.services.accounts import (
    PADDED_EMAIL,
    authenticate,
    check_credentials,
    create_account,
    end_sessions,
    fingerprint,
    merge_users,
    normalize_email,
)
from app.services.errors import Conflict, InvalidInput, ServiceError, TooManyRequests, Unauthorized
from app.services.ratelimit import RateLimiter
from app.validation import ApiModel
from app.web import templates

router = APIRouter(prefix="/api/auth", tags=["auth"])
pages = APIRouter(prefix="/auth", tags=["pages"], include_in_schema=False)


# The body of a JSON sign-up or log-in.
class Credentials(ApiModel):
    email: str = Field(max_length=320)
    password: str = Field(max_length=1024)


# A sign-up's: the address as app/services/accounts.py checks it (surrounding spaces are trimmed).
class SignupCredentials(Credentials):
    email: str = Field(max_length=254, pattern=PADDED_EMAIL)


def safe_next(target: str | None) -> str:
    """Only same-site paths: '/quiz' yes; 'https://evil.example', '//evil.example' no."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


# Who is signed in: an account (its email), or a guest (`id` null until the guest keeps something).
class Me(Public):
    id: int | None
    email: str | None
    guest: bool


def me_json(user: User | None) -> Me:
    if user is None or user.is_guest:
        return Me(id=user.id if user else None, email=None, guest=True)
    return Me(id=user.id, email=user.email, guest=False)


def sign_in(request: Request, user: User, settings: Settings) -> None:
    assert user.id is not None and user.email is not None
    secret = settings.secret_key
    log_in(request, user_id=user.id, email=user.email, fingerprint=fingerprint(user, secret))


def do_signup(
    request: Request, session: Session, settings: Settings, limiter: RateLimiter, email: str, password: str
) -> User:
    limiter.check(
        f"signup:ip:{_client(request)}", "Too many sign-ups from this address: try again in {wait} s"
    )
    visitor = find_user(request, session)
    user = create_account(
        session=session,
        guest=visitor if visitor is not None and visitor.is_guest and guest_began_here(request) else None,
        email=email,
        password=password,
        settings=settings,
    )
    sign_in(request, user, settings)
    return user


# The log-in's three rate limiters, in the order they are checked.
@dataclass(frozen=True)
class LoginLimits:
    email_ip: LoginLimiter
    ip: LoginIpLimiter
    email: LoginEmailLimiter


def _login_allowed(request: Request, limits: LoginLimits, email: str) -> None:
    """Three limits, checked in turn; a refused attempt counts against none of the later ones.

    One email from one client (fast: a typo-prone owner has room), one client over all emails
    (credential stuffing), one email from everywhere (slower: many addresses guessing one
    password). An attacker's guesses from their address use up only their own first bucket,
    so the owner, from another address, still gets in.
    """
    client, key = _client(request), normalize_email(email)[:254]
    for limiter, bucket in (
        (limits.email_ip, f"login:email-ip:{key}:{client}"),
        (limits.ip, f"login:ip:{client}"),
        (limits.email, f"login:email:{key}"),
    ):
        limiter.check(bucket, "Too many log-in attempts: try again in {wait} s")


def do_login(
    request: Request, session: Session, settings: Settings, limits: LoginLimits, email: str, password: str
) -> User:
    _login_allowed(request, limits, email)
    visitor = find_user(request, session)
    user = authenticate(session=session, email=email, password=password, settings=settings)
    if user is None:
        raise Unauthorized("Wrong email or password.", "password")
    if visitor is not None and visitor.is_guest and guest_began_here(request):
        merge_users(session=session, source=visitor, target=user)
    sign_in(request, user, settings)
    return user


LoginLimitsDep = Annotated[LoginLimits, Depends()]


# --- JSON API -------------------------------------------------------------------------------------


@router.get("/me", response_model=Me)
def me(user: MaybeUser) -> Me:
    return me_json(user)


@router.post("/signup", status_code=201, response_model=Me, responses=refusals(Conflict, InvalidInput))
def api_signup(
    body: SignupCredentials,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    limiter: SignupLimiter,
) -> Me:
    return me_json(do_signup(request, session, settings, limiter, body.email, body.password))


@router.post("/login", response_model=Me, responses=refusals(Unauthorized))
def api_login(
    body: Credentials, request: Request, session: SessionDep, settings: SettingsDep, limits: LoginLimitsDep
) -> Me:
    return me_json(do_login(request, session, settings, limits, body.email, body.password))


def end_session(request: Request, session: Session, user: User | None) -> None:
    """Log out on the server too: the account's session version moves on, so this cookie (and
    any copy of it) no longer signs anyone in; then a fresh guest session."""
    if user is not None and not user.is_guest:
        end_sessions(session=session, user=user)
    log_out(request)


@router.post("/logout", status_code=204)
def api_logout(request: Request, session: SessionDep, user: MaybeUser) -> Response:
    end_session(request, session, user)
    return Response(status_code=204)


# --- HTML pages -----------------------------------------------------------------------------------


def _form(
    request: Request,
    template: str,
    settings: Settings,
    *,
    email: str = "",
    next_url: str = "/",
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> HTMLResponse:
    context = {
        "email": email,
        "next": safe_next(next_url),
        "errors": errors or {},
        "password_min": settings.password_min_length,
        "password_max": settings.password_max_length,
    }
    return templates.TemplateResponse(request, template, context, status_code=status)


@pages.get("/signup", response_class=HTMLResponse)
def signup_page(request: Request, settings: SettingsDep, next: str = "/") -> HTMLResponse:
    return _form(request, "auth/signup.html", settings, next_url=next)


@pages.post("/signup", response_class=HTMLResponse, dependencies=[CsrfChecked])
def signup_form(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    limiter: SignupLimiter,
    # No length limits here: the request guard bounds the body, and an over-long value must come
    # back as a message beside its field (with the email kept), not as a bare validation error.
    email: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    confirm: Annotated[str, Form()] = "",
    next: Annotated[str, Form(max_length=500)] = "/",
) -> Response:
    args: dict[str, Any] = {"email": email[:320], "next_url": next}
    # Every problem at once, so one round trip fixes them all.
    errors = check_credentials(email=normalize_email(email), password=password, settings=settings)
    if password != confirm:
        errors["confirm"] = "The passwords differ."
    if errors:
        return _form(request, "auth/signup.html", settings, **args, errors=errors, status=422)
    try:
        do_signup(request, session, settings, limiter, email, password)
    except TooManyRequests as exc:
        errors = {"form": f"{exc.message}."}
        return _form(request, "auth/signup.html", settings, **args, errors=errors, status=429)
    except ServiceError as exc:
        errors = {exc.field or "form": exc.message}
        return _form(request, "auth/signup.html", settings, **args, errors=errors, status=422)
    flash(request, "Welcome! Your account is ready, and your progress so far is in it.", "success")
    return RedirectResponse(safe_next(next), status_code=303)


@pages.get("/login", response_class=HTMLResponse)
def login_page(request: Request, settings: SettingsDep, next: str = "/") -> HTMLResponse:
    return _form(request, "auth/login.html", settings, next_url=next)


@pages.post("/login", response_class=HTMLResponse, dependencies=[CsrfChecked])
def login_form(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    limits: LoginLimitsDep,
    email: Annotated[str, Form(max_length=320)] = "",
    password: Annotated[str, Form(max_length=1024)] = "",
    next: Annotated[str, Form(max_length=500)] = "/",
) -> Response:
    args: dict[str, Any] = {"email": email, "next_url": next}
    try:
        do_login(request, session, settings, limits, email, password)
    except TooManyRequests as exc:
        errors = {"form": f"{exc.message}."}
        return _form(request, "auth/login.html", settings, **args, errors=errors, status=429)
    except ServiceError as exc:
        errors = {exc.field or "form": exc.message}
        return _form(request, "auth/login.html", settings, **args, errors=errors, status=401)
    flash(request, "Welcome back.", "success")
    return RedirectResponse(safe_next(next), status_code=303)


@pages.post("/logout", dependencies=[CsrfChecked])
def logout_form(request: Request, session: SessionDep, user: MaybeUser) -> RedirectResponse:
    end_session(request, session, user)
    flash(request, "You are logged out. Your progress is safe in your account.")
    return RedirectResponse("/", status_code=303)
