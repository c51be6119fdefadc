"""create_app(): routers, middleware, static files and the start-up checks."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlmodel import Session
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.config import Settings, get_settings
from app.content.catalog import load_catalog
from app.cookie_session import (
    STATIC_PREFIX,
    GuestSessionMiddleware,
    SessionCookieMiddleware,
    csrf_token,
    pop_flashes,
    signed_in_email,
)
from app.db import make_engine
from app.lab.jobs import LabJobs
from app.middleware import BodySizeLimit
from app.pages import GuestPageShortcut
from app.routes import (
    account,
    auth,
    calculator,
    cards,
    challenge_run,
    challenges,
    docs,
    home,
    key_points,
    lab,
    mock_api,
    mock_pages,
    progress,
    quiz_api,
    quiz_pages,
    quiz_undo,
    submissions,
    topics,
)
from app.routes import settings as settings_routes
from app.security import RequestGuard, SecurityHeaders
from app.services.challenge_runs import RunsInProgress
from app.services.content_sync import sync_bank
from app.services.errors import ServiceError, TooManyRequests
from app.services.grading import build_queue
from app.services.guests import purge_idle_guests
from app.services.personal_fsrs import FitJobs
from app.services.personal_pages import PersonalPages
from app.services.ratelimit import RateLimiter
from app.services.ratelimit_db import DatabaseStorage
from app.services.site import load_site_content
from app.services.verdict_waits import VerdictWaits
from app.static_assets import HashedStaticFiles
from app.web import static_assets, templates

log = logging.getLogger("kvprep")

# Helpers every page may call: the header's account links, CSRF tokens for forms, flashes.
templates.env.globals.update(csrf_token=csrf_token, signed_in_email=signed_in_email, pop_flashes=pop_flashes)


def _wants_html(request: Request) -> bool:
    """A page's error is a page; /api and /static errors are plain (static requests carry no
    session, which the page's header reads)."""
    path = request.url.path
    return not path.startswith(("/api", STATIC_PREFIX)) and "text/html" in request.headers.get("accept", "")


def _error_page(request: Request, status: int, detail: str) -> Response:
    return templates.TemplateResponse(
        request, "errors/error.html", {"status": status, "detail": detail}, status_code=status
    )


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            # Refuse to start on a broken bank: load_catalog raises ContentError naming file and field.
            app.state.catalog = load_catalog(settings.content_root)
            if settings.sync_content_on_start:
                with Session(app.state.engine) as session:
                    report = sync_bank(session=session, bank=app.state.catalog.bank)
                    log.info("question bank synced: %s", report)
            with Session(app.state.engine) as session:
                app.state.site = load_site_content(session)
                purged = purge_idle_guests(session=session, idle_days=settings.guest_idle_days)
                if purged:
                    log.info("removed %d idle guests that kept nothing", purged)
            challenges = app.state.catalog.challenges
            app.state.grading = build_queue(
                settings,
                app.state.engine,
                {c.slug: c.meta.topics for c in challenges},
                {c.slug: c.meta.mistake_hints for c in challenges},
            )
            app.state.grading.on_done = app.state.verdict_waits.notify
            # Lab runs go through the same queue; its workers only launch their child processes.
            app.state.lab = LabJobs(app.state.grading.huey, app.state.engine, settings)
            app.state.grading.companions.append(app.state.lab)  # dispatched where the queue is consumed
            # So do personal FSRS fits (app/services/personal_fsrs.py).
            app.state.fsrs_fits = FitJobs(app.state.grading.huey, settings)
            if settings.grading_workers > 0:
                app.state.grading.start_workers(settings.grading_workers)
            # Everything loaded so far (torch's modules above all) lives as long as the process: out
            # of the collector's sight, a full collection no longer walks it, which paused pages
            # for hundreds of milliseconds under load.
            gc.collect()
            gc.freeze()
            yield
        finally:
            if getattr(app.state, "grading", None) is not None:
                app.state.grading.stop()
            if settings.grading_workers > 0:
                # Here, not at exit: uvicorn ends a SIGTERM'd process by re-raising the signal,
                # and atexit handlers never run (the fork server's folders would stay behind).
                from graders.runner import shutdown as stop_sandbox

                stop_sandbox()
            app.state.engine.dispose()

    app = FastAPI(
        title="kvprep",
        summary="Interview trainer for LLM inference",
        lifespan=lifespan,
        # /docs is our own page (app/routes/docs.py) with Swagger UI served locally; ReDoc would
        # come from a CDN, so it is off.
        docs_url=None,
        redoc_url=None,
        # No OpenTelemetry here: its checks ran on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    # The app's own engine, disposed when it shuts down.
    app.state.engine = make_engine(settings.database_url, settings.sqlite_busy_timeout_s)
    # Rate limits live in Redis when there is one, else in the database: every process of the
    # server counts together, and a restart forgets nothing.
    limits_storage: str | DatabaseStorage = settings.redis_url or DatabaseStorage(app.state.engine)
    app.state.submit_limiter = RateLimiter(f"{settings.submissions_per_minute}/minute", limits_storage)
    app.state.login_limiter = RateLimiter(f"{settings.login_attempts_per_minute}/minute", limits_storage)
    app.state.login_ip_limiter = RateLimiter(
        f"{settings.login_attempts_per_ip_per_minute}/minute", limits_storage
    )
    app.state.login_email_limiter = RateLimiter(
        f"{settings.login_attempts_per_email_per_hour}/hour", limits_storage
    )
    app.state.signup_limiter = RateLimiter(f"{settings.signups_per_hour}/hour", limits_storage)
    app.state.lab_limiter = RateLimiter(f"{settings.lab_runs_per_hour}/hour", limits_storage)
    app.state.lab_guest_limiter = RateLimiter(
        f"{settings.lab_guest_runs_per_address_per_hour}/hour", limits_storage
    )
    app.state.run_ip_limiter = RateLimiter(f"{settings.runs_per_address_per_minute}/minute", limits_storage)
    app.state.guest_limiter = RateLimiter(f"{settings.guests_per_hour}/hour", limits_storage)
    app.state.verdict_waits = VerdictWaits()
    # At most one Run per visitor at a time, and run_slots Runs in all (their own sandbox slots).
    app.state.challenge_runs = RunsInProgress(settings.run_slots)
    app.state.personal_pages = PersonalPages()  # each user's dashboard, until their data moves
    # Innermost first: the kept guest pages answer inside the session middlewares, below any other.
    app.add_middleware(GuestPageShortcut)
    app.add_middleware(GuestSessionMiddleware)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(
        SessionCookieMiddleware,
        secret_key=settings.secret_key,
        session_cookie="kvprep_session",
        max_age=settings.session_max_age_s,
        same_site="lax",
        https_only=settings.cookies_secure,
    )
    # Outermost: refusals of the guard get the security headers too.
    origins = frozenset(
        o.strip().rstrip("/").encode() for o in settings.trusted_origins.split(",") if o.strip()
    )
    app.add_middleware(RequestGuard, trusted_origins=origins)
    app.add_middleware(SecurityHeaders, hsts=settings.send_hsts)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if _wants_html(request):
            return _error_page(request, exc.status_code, str(exc.detail))
        detail: object = exc.detail
        if exc.status_code == 422 and isinstance(detail, str):
            # The OpenAPI schema documents every 422 as a list of validation errors.
            detail = [{"loc": ["body"], "msg": detail, "type": "value_error"}]
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> Response:
        """The one translation of a service's refusal: routes let it through and never catch it to
        re-raise. The JSON is what HTTPException(status, message) gave (a 422's detail a list of
        one validation error, as the schema documents), plus `field` when the error names one."""
        if _wants_html(request):
            return _error_page(request, exc.status, exc.message)
        detail: object = exc.message
        if exc.status == 422:
            detail = [{"loc": ["body"], "msg": exc.message, "type": "value_error"}]
        body: dict[str, object] = {"detail": detail}
        if exc.field is not None:
            body["field"] = exc.field
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyRequests) else None
        return JSONResponse(body, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        if _wants_html(request):
            problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in exc.errors())
            return _error_page(request, 422, problems)
        errors = [{k: e[k] for k in ("loc", "msg", "type") if k in e} for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    app.mount("/static", HashedStaticFiles(manifest=static_assets), name="static")
    app.include_router(home.pages)
    app.include_router(docs.pages)
    app.include_router(topics.pages)
    app.include_router(cards.pages)
    app.include_router(cards.router)
    app.include_router(challenges.pages)
    app.include_router(challenges.router)
    app.include_router(submissions.router)
    app.include_router(challenge_run.router)
    app.include_router(auth.pages)
    app.include_router(auth.router)
    app.include_router(quiz_pages.pages)
    app.include_router(quiz_api.router)
    app.include_router(quiz_undo.pages)
    app.include_router(quiz_undo.router)
    app.include_router(settings_routes.pages)
    app.include_router(settings_routes.router)
    app.include_router(key_points.router)
    app.include_router(progress.pages)
    app.include_router(progress.router)
    app.include_router(account.pages)
    app.include_router(account.router)
    app.include_router(mock_pages.pages)
    app.include_router(mock_api.router)
    app.include_router(lab.pages)
    app.include_router(lab.router)
    app.include_router(calculator.pages)
    app.include_router(calculator.router)
    return app
