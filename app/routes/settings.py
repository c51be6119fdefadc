"""Study settings and personal scheduling: the page (/settings) and its JSON (/api/settings/scheduling).

The page shows the retention target and interview date (editable), how many reviews the user has,
whether FSRS runs on parameters fitted to them or on the defaults, and fits or resets them.
A fit is queued (app/services/personal_fsrs.py); the page shows its result when it is done.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel
from sqlmodel import Session

from app.config import Settings
from app.cookie_session import flash
from app.deps import ClockDep, CsrfChecked, CurrentUser, FitsDep, SessionDep, SettingsDep, Visitor
from app.models import User
from app.routes.refusals import refusals
from app.services import personal_fsrs
from app.services.errors import Conflict, NotReady, ServiceError
from app.services.personal_fsrs import FIT_MIN_REVIEWS, MAX_SEQ_LEN
from app.services.scheduling import due_counts, retention_for
from app.services.study_settings import StudyForm, read_study_form, save_study_form, study_form_for
from app.web import templates

router = APIRouter(prefix="/api/settings", tags=["settings"])
pages = APIRouter(prefix="/settings", tags=["pages"], include_in_schema=False)


# One fit of the user's FSRS parameters, as the API shows it.
class FitPublic(BaseModel):
    id: str
    status: str  # queued | running | done | failed
    reviews: int  # the counted reviews it learned from
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    seconds: float | None  # how long the optimizer ran


# The user's scheduling: the settings that shape it, the review log's size, the parameters in use.
class SchedulingPublic(BaseModel):
    desired_retention: float
    interview_date: date | None
    reviews: int
    counted_reviews: int  # a day or more after the card's previous review: what a fit learns from
    reviews_needed: int  # counted reviews still missing before a fit can learn anything
    threshold: int
    personal: bool
    parameters: list[float]
    can_fit: bool
    fit_pending: bool
    fit: FitPublic | None
    fit_error: str | None


def scheduling_json(session: Session, user: User, settings: Settings, now: datetime) -> SchedulingPublic:
    state = personal_fsrs.personal_scheduling(session=session, user=user, now=now)
    fit = state.fit
    return SchedulingPublic(
        desired_retention=retention_for(user, settings),
        interview_date=user.interview_date,
        reviews=state.reviews,
        counted_reviews=state.counted,
        reviews_needed=state.needed,
        threshold=FIT_MIN_REVIEWS,
        personal=state.personal,
        parameters=list(state.parameters),
        can_fit=state.can_fit,
        fit_pending=state.fit_pending,
        fit=None if fit is None else FitPublic.model_validate(fit, from_attributes=True),
        fit_error=personal_fsrs.fit_error(fit, now),
    )


# --- JSON API -------------------------------------------------------------------------------------


@router.get("/scheduling")
def api_scheduling(
    user: Visitor, session: SessionDep, settings: SettingsDep, clock: ClockDep
) -> SchedulingPublic:
    """The retention target, interview date, review counts, and whether the parameters are personal."""
    return scheduling_json(session, user, settings, clock.now())


@router.post("/scheduling/fit", status_code=202, responses=refusals(Conflict, NotReady))
def api_fit(
    fits: FitsDep, user: CurrentUser, session: SessionDep, settings: SettingsDep, clock: ClockDep
) -> SchedulingPublic:
    """Queue a fit of the user's FSRS parameters: 409 with too few reviews or while one is under way."""
    now = clock.now()
    fits.submit(session=session, user=user, now=now)
    return scheduling_json(session, user, settings, now)


@router.delete("/scheduling/parameters")
def api_reset(
    user: CurrentUser, session: SessionDep, settings: SettingsDep, clock: ClockDep
) -> SchedulingPublic:
    """Back to fsrs's default parameters."""
    personal_fsrs.reset_parameters(session=session, user=user)
    return scheduling_json(session, user, settings, clock.now())


# --- HTML pages -----------------------------------------------------------------------------------


def _page(
    request: Request,
    session: Session,
    user: User,
    settings: Settings,
    now: datetime,
    *,
    study: StudyForm | None = None,
    fit_message: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    state = personal_fsrs.personal_scheduling(session=session, user=user, now=now)
    return templates.TemplateResponse(
        request,
        "settings/index.html",
        {
            "user": user,
            "study": study or study_form_for(user, settings),
            "study_action": "/settings",
            "default_percent": round(settings.desired_retention * 100),
            "counts": due_counts(session=session, user=user, settings=settings, now=now),
            "state": state,
            "fit_error": personal_fsrs.fit_error(state.fit, now),
            "fit_message": fit_message,
            "threshold": FIT_MIN_REVIEWS,
            "max_seq_len": MAX_SEQ_LEN,
            "now": now,
        },
        status_code=status,
    )


@pages.get("", response_class=HTMLResponse)
def settings_page(
    request: Request, user: Visitor, session: SessionDep, settings: SettingsDep, clock: ClockDep
) -> HTMLResponse:
    return _page(request, session, user, settings, clock.now())


@pages.post("", dependencies=[CsrfChecked])
def study_settings_form(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
    retention: Annotated[str, Form(max_length=10)] = "",
    interview_date: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    now = clock.now()
    form = read_study_form(retention, interview_date, today=now.date())
    if form.errors:
        return _page(request, session, user, settings, now, study=form, status=422)
    save_study_form(session=session, user=user, form=form)
    flash(request, "Settings saved.", "success")
    return RedirectResponse("/settings", status_code=303)


@pages.post("/fit", dependencies=[CsrfChecked])
def fit_form(
    request: Request,
    fits: FitsDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    clock: ClockDep,
) -> Response:
    now = clock.now()
    try:
        fits.submit(session=session, user=user, now=now)
    except ServiceError as exc:
        return _page(request, session, user, settings, now, fit_message=exc.message, status=exc.status)
    flash(request, "Fitting your parameters to your reviews: this page shows the result when it is done.")
    return RedirectResponse("/settings#personal", status_code=303)


@pages.post("/reset", dependencies=[CsrfChecked])
def reset_form(request: Request, user: CurrentUser, session: SessionDep) -> Response:
    personal_fsrs.reset_parameters(session=session, user=user)
    flash(request, "Back to FSRS's default parameters.", "success")
    return RedirectResponse("/settings#personal", status_code=303)
