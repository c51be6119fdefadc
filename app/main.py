"""create_app(): routers, middleware, static files and the start-up checks."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from sqlmodel import Session

from app.body_size_limit import BodySizeLimit
from app.config import Settings, get_settings
from app.content.catalog import load_catalog
from app.cookie_session import (
    GuestSessionMiddleware,
    SessionCookieMiddleware,
    csrf_token,
    pop_flashes,
    signed_in_email,
)
from app.db import engine_for
from app.error_handlers import add_error_handlers
from app.lab.jobs import LabJobs
from app.openapi import install as document_refusals
from app.pages import GuestPageShortcut
from app.personal_views import ForgetPagesOnWrite, PersonalPageShortcut, forget_submitter
from app.routes import ROUTERS
from app.security import RequestGuard, SecurityHeaders
from app.services.challenge_runs import RunsInProgress
from app.services.content_sync import sync_bank
from app.services.grading import build_queue
from app.services.guests import purge_idle_guests
from app.services.personal_fsrs import FitJobs
from app.services.personal_pages import PersonalPages
from app.services.rate_limits import Limiters
from app.services.site_content import load_site_content
from app.services.verdict_waits import VerdictWaits
from app.static_assets import HashedStaticFiles
from app.web import static_assets, templates

log = logging.getLogger("kvprep")

# Helpers every page may call: the header's account links, CSRF tokens for forms, flashes.
templates.env.globals.update(csrf_token=csrf_token, signed_in_email=signed_in_email, pop_flashes=pop_flashes)


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
            waits, kept, engine = app.state.verdict_waits, app.state.personal_pages, app.state.engine

            def verdict_stored(submission_id: str, payload: dict[str, Any]) -> None:
                waits.notify(submission_id, payload)
                forget_submitter(engine, kept, submission_id)

            app.state.grading.on_done = verdict_stored
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
    app.state.engine = engine_for(settings)
    app.state.limiters = Limiters.for_settings(settings, app.state.engine)
    app.state.verdict_waits = VerdictWaits()
    # At most one Run per visitor at a time, and run_slots Runs in all (their own sandbox slots).
    app.state.challenge_runs = RunsInProgress(settings.run_slots)
    app.state.personal_pages = PersonalPages()  # each user's personal pages, until their data moves
    # Innermost first: the kept guest pages answer inside the session middlewares, below any other.
    app.add_middleware(ForgetPagesOnWrite)
    app.add_middleware(GuestPageShortcut)
    app.add_middleware(PersonalPageShortcut)
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

    add_error_handlers(app)

    app.mount("/static", HashedStaticFiles(manifest=static_assets), name="static")
    for router in ROUTERS:
        app.include_router(router)
    document_refusals(app)
    return app
