"""Shared route dependencies as Annotated aliases, so a signature says what a route needs."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from app.config import Settings
from app.content.catalog import Catalog
from app.content.challenges import Challenge
from app.cookie_session import (
    USER_KEY,
    csrf_protect,
    guest_row_id,
    guest_token,
    log_out,
    remember_guest_row,
    session_account,
)
from app.lab.jobs import LabJobs
from app.models import User
from app.services.accounts import fingerprint
from app.services.api_tokens import account_for_token
from app.services.challenge_runs import RunsInProgress
from app.services.clock import SYSTEM_CLOCK, Clock
from app.services.errors import Forbidden, NotFound, Unauthorized
from app.services.grading import GradingQueue
from app.services.personal_fsrs import FitJobs
from app.services.personal_pages import PersonalPages
from app.services.rate_limits import refuse_too_fast
from app.services.ratelimit import RateLimiter
from app.services.site_content import SiteContent
from app.services.verdict_waits import VerdictWaits
from app.validation import CodeSubmission, refuse_oversized


def _from_state(name: str) -> Callable[[Request], Awaitable[Any]]:
    """A dependency on what create_app (or its lifespan) put on app.state under `name`.

    A coroutine: FastAPI runs a plain function dependency in the thread pool, a hop that costs
    more than the page it feeds.
    """

    async def dependency(request: Request) -> Any:
        return getattr(request.app.state, name)

    dependency.__name__ = f"app_{name}"
    return dependency


app_settings = _from_state("settings")
app_catalog = _from_state("catalog")
app_site = _from_state("site")
app_engine = _from_state("engine")
app_lab = _from_state("lab")
get_grading = _from_state("grading")

SettingsDep = Annotated[Settings, Depends(app_settings)]
CatalogDep = Annotated[Catalog, Depends(app_catalog)]
SiteDep = Annotated[SiteContent, Depends(app_site)]
# The app's engine, for work that opens its own session off the request's (in the thread pool).
EngineDep = Annotated[Engine, Depends(app_engine)]


def get_session(engine: EngineDep) -> Iterator[Session]:
    """One session per request, on the engine of the app that serves it."""
    with Session(engine) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]
LabDep = Annotated[LabJobs, Depends(app_lab)]
# The queue of FSRS parameter fits (each runs in a child of the worker).
FitsDep = Annotated[FitJobs, Depends(_from_state("fsrs_fits"))]
GradingDep = Annotated[GradingQueue, Depends(get_grading)]
# The requests long-polling for a verdict, woken by this process's grading threads.
VerdictWaitsDep = Annotated[VerdictWaits, Depends(_from_state("verdict_waits"))]
# Each user's dashboard as last rendered, until their data moves.
PersonalPagesDep = Annotated[PersonalPages, Depends(_from_state("personal_pages"))]


# The visitors with a challenge Run going in this process (one each at a time).
RunsDep = Annotated[RunsInProgress, Depends(_from_state("challenge_runs"))]


def _limiter(name: str) -> Callable[[Request], Awaitable[RateLimiter]]:
    """A dependency on one limiter of the app's bundle (app/services/rate_limits.py: what each counts)."""

    async def dependency(request: Request) -> RateLimiter:
        return getattr(request.app.state.limiters, name)  # type: ignore[no-any-return]

    dependency.__name__ = f"{name}_limiter"
    return dependency


SubmitLimiter = Annotated[RateLimiter, Depends(_limiter("submit"))]
LoginLimiter = Annotated[RateLimiter, Depends(_limiter("login"))]
LoginIpLimiter = Annotated[RateLimiter, Depends(_limiter("login_ip"))]
LoginEmailLimiter = Annotated[RateLimiter, Depends(_limiter("login_email"))]
SignupLimiter = Annotated[RateLimiter, Depends(_limiter("signup"))]
LabLimiter = Annotated[RateLimiter, Depends(_limiter("lab"))]
LabGuestLimiter = Annotated[RateLimiter, Depends(_limiter("lab_guest"))]
RunIpLimiter = Annotated[RateLimiter, Depends(_limiter("run_ip"))]
GuestLimiter = Annotated[RateLimiter, Depends(_limiter("guest"))]


def client_address(request: Request) -> str:
    """The client's address, as the per-address limits count it (a trusted proxy's word, else the peer)."""
    return request.client.host if request.client else "unknown"


# What a personal API token may never do: what proves the account's owner is at the keyboard.
TOKEN_REFUSED = frozenset({("DELETE", "/api/account"), ("PUT", "/api/account/password")})
TOKEN_REFUSED_PREFIXES = ("/api/auth/",)  # sign-up, log-in, log-out: sessions are the browser's


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None without one (or another scheme)."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def token_account(request: Request, session: Session, token: str) -> User:
    """The account a personal API token acts for, on the JSON API only (app/services/api_tokens.py).

    Refused (403) on pages and forms, which need the signed-in browser, and on what the token may
    never do (TOKEN_REFUSED). A wrong token is 401 and counts as a failed log-in from its address.
    """
    path = request.url.path
    if not path.startswith("/api/"):
        raise Forbidden(
            "API tokens work only on the JSON API (/api/...): pages and forms need you signed in."
        )
    if (request.method, path.rstrip("/")) in TOKEN_REFUSED or path.startswith(TOKEN_REFUSED_PREFIXES):
        raise Forbidden(
            "An API token cannot do this: deleting the account, changing its password, logging in or "
            "out take the signed-in browser."
        )
    user = account_for_token(session=session, token=token, now=app_clock(request).now())
    if user is None:
        request.app.state.limiters.login_ip.check(
            f"login:ip:{client_address(request)}", "Too many invalid API tokens: try again in {wait} s"
        )
        raise Unauthorized(
            "This API token is not valid (revoked, or mistyped): make a new one on the account page.",
            "authorization",
        )
    return user


def find_user(request: Request, session: SessionDep) -> User | None:
    """The account of the request's API token, else the signed-in account, else the guest's row if
    it exists yet; creates nothing.

    A guest whose session says it has no row costs no query at all.
    """
    token = bearer_token(request)
    if token is not None:
        return token_account(request, session, token)
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
    if guest_row_id(request) == 0:
        return None
    user = session.exec(select(User).where(User.guest_token == token)).first()
    remember_guest_row(request, user.id if user else None)
    return user


def current_user(request: Request, session: SessionDep, limiter: GuestLimiter) -> User:
    """The visitor's user row: the account, or a guest row created now, for something worth keeping.

    Only routes that store something for the visitor depend on this; pages that only read use
    `Visitor`. New guest rows are rate-limited per client address (a script without cookies
    would otherwise mint a row per request).
    """
    user = find_user(request, session)
    if user is not None:
        return user
    token = guest_token(request)
    # The session may be stale (two tabs): look once before creating.
    user = session.exec(select(User).where(User.guest_token == token)).first()
    if user is None:
        limiter.check(
            f"guest:ip:{client_address(request)}",
            "Too many new guests from your address: sign in, or try again later",
        )
        try:
            user = User(guest_token=token)
            session.add(user)
            session.commit()
            session.refresh(user)
        except IntegrityError:  # the same guest's other request made it first
            session.rollback()
            user = session.exec(select(User).where(User.guest_token == token)).one()
    remember_guest_row(request, user.id)
    return user


def visitor(request: Request, session: SessionDep) -> User:
    """The visitor's row for a page that only reads: without one, an unsaved stand-in (id 0).

    No user row has id 0, so every query on the stand-in finds nothing: a guest who has done
    nothing yet sees an empty history, and no row is created for looking. Helpers that open their
    own session (off the event loop) call it with that session.
    """
    user = find_user(request, session)
    return user if user is not None else User(id=0, guest_token=guest_token(request))


CurrentUser = Annotated[User, Depends(current_user)]
MaybeUser = Annotated[User | None, Depends(find_user)]
Visitor = Annotated[User, Depends(visitor)]


# For `dependencies=[CsrfChecked]` on every HTML form route that changes data.
CsrfChecked = Depends(csrf_protect)


def app_clock(request: Request) -> Clock:
    """The server's clock: the system clock, or the ManualClock a test put on app.state.clock."""
    return getattr(request.app.state, "clock", SYSTEM_CLOCK)  # type: ignore[no-any-return]


async def _clock_dependency(request: Request) -> Clock:
    return app_clock(request)


ClockDep = Annotated[Clock, Depends(_clock_dependency)]


async def challenge_by_slug(slug: str, catalog: CatalogDep) -> Challenge:
    challenge = catalog.challenge(slug)
    if challenge is None:
        raise NotFound("Challenge not found")
    return challenge


# The challenge the path's {slug} names, or 404.
ChallengeDep = Annotated[Challenge, Depends(challenge_by_slug)]


def submit_allowed(
    body: CodeSubmission, limiter: SubmitLimiter, settings: SettingsDep, user: CurrentUser
) -> str:
    """The submitted code, once it is small enough and the visitor is not submitting too fast.

    One bucket per user for the challenge pages and the mock interviews alike: a mock interview
    is no way around the rate limit.
    """
    refuse_oversized(body.code, settings)
    refuse_too_fast(limiter, settings, f"submit:{user.id}", "You are submitting too fast")
    return body.code


# The code of a submission that passed the size and rate check (413, 429 otherwise).
SubmitAllowed = Annotated[str, Depends(submit_allowed)]
