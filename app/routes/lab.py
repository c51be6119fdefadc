"""The lab: start a run of the GPT-2 experiments, watch its progress, read its results and charts."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session

from app.config import Settings
from app.cookie_session import flash
from app.deps import (
    CsrfChecked,
    GuestLimiter,
    LabDep,
    LabGuestLimiter,
    LabLimiter,
    SessionDep,
    SettingsDep,
    Visitor,
    client_address,
    current_user,
    find_user,
)
from app.enums import LabRunStatus
from app.lab.experiments import EXPERIMENT_NAMES, EXPERIMENTS, SEED
from app.lab.jobs import LabJobs, is_stale, own_run, recent_runs
from app.lab.runner import SIZE_NAMES, SIZES
from app.models import LabRun
from app.routes.public import Public, Timestamp
from app.routes.refusals import refusals
from app.services.errors import NotFound, ServiceError
from app.services.ratelimit import RateLimiter
from app.web import templates

router = APIRouter(prefix="/api/lab", tags=["lab"])
pages = APIRouter(prefix="/lab", tags=["pages"], include_in_schema=False)

EXPERIMENT_TITLES = {
    "prefill": "Prefill time against prompt length (seed: 16 tokens in 15.3 ms, 960 in 219.6 ms)",
    "decode": "A decode step with and without the cache (seed: 9.6 ms vs 228.8 ms after 960 tokens, ~24x)",
    "exactness": "Greedy tokens identical with and without the cache",
    "position_limit": "Position 1,025 of GPT-2's 1,024-row table",
    "cache_bytes": "The cache's bytes against the formula (seed: 72 KiB per token in fp32)",
    "batching": "Batch size against tokens per second and one user's latency",
}


def run_heading(size: str, experiments: list[str]) -> str:
    """A run as the pages name it: the model and the experiments in words, never their keys."""
    chosen = [EXPERIMENT_NAMES.get(name, name) for name in experiments] or ["every experiment"]
    return f"{SIZE_NAMES.get(size, size)} · {', '.join(chosen)}"


# The body of a lab run request.
class LabRunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The names as enums for the document; the service checks them, with its own sentence.
    size: str = Field(
        default="full",
        description="full (GPT-2 small, the seed's figures) or tiny (seconds)",
        json_schema_extra={"enum": list(SIZES)},
    )
    experiments: list[Annotated[str, Field(json_schema_extra={"enum": list(EXPERIMENTS)})]] = Field(
        default_factory=list, description="empty: every experiment"
    )


# A lab run: `error` only once it failed, `result` (every experiment's figures) only once done.
class LabRunPublic(Public):
    id: str
    status: LabRunStatus
    size: str
    experiments: list[str]
    progress: float = Field(description="0..1")
    message: str
    created_at: Timestamp
    error: str | None = None
    result: dict[str, Any] | None = None


def run_json(run: LabRun, settings: Settings) -> dict[str, Any]:
    status = "failed" if is_stale(run, settings) else run.status
    out: dict[str, Any] = {
        "id": run.id,
        "status": status,
        "size": run.size,
        "experiments": run.experiments,
        "progress": run.progress,
        "message": run.message,
        "created_at": run.created_at.isoformat(),
    }
    if status == LabRunStatus.FAILED:
        out["error"] = run.error or "the lab job stopped reporting (its process died); start it again"
    if run.status == LabRunStatus.DONE:
        out["result"] = run.result
    return out


def _load_run(session: Session, user_id: int | None, run_id: str) -> LabRun:
    run = own_run(session=session, user_id=user_id, run_id=run_id)
    if run is None:
        raise NotFound("Lab run not found")
    return run


def _start(
    request: Request,
    session: Session,
    settings: Settings,
    lab: LabJobs,
    limiters: tuple[RateLimiter, RateLimiter, RateLimiter],
    body: LabRunCreate,
) -> LabRun:
    """Queue the run. TooManyRequests past a budget or a cap; LabRequestError for a bad size or
    experiment. A guest (no account) spends its client address's small hourly budget, checked
    before a guest row is made for it; an account spends its own."""
    account_limiter, guest_limiter, new_guest_limiter = limiters
    address = client_address(request)
    user = find_user(request, session)
    if user is None or user.is_guest:
        guest_limiter.check(
            f"{settings.queue_name}:lab:ip:{address}",
            "Guests from your address have started many lab runs this hour: sign in to run more",
        )
        user = user or current_user(request, session, new_guest_limiter)
    else:
        account_limiter.check(
            f"{settings.queue_name}:lab:{user.id}", "You have started many lab runs this hour"
        )
    return lab.submit(
        session=session, user_id=user.id or 0, size=body.size, experiments=body.experiments, address=address
    )


@router.post(
    "/runs",
    status_code=202,
    response_model=LabRunPublic,
    response_model_exclude_unset=True,
    responses={429: {"description": "Over the hourly budget, or too many lab runs waiting or running"}},
)
def api_start(
    request: Request,
    body: LabRunCreate,
    session: SessionDep,
    settings: SettingsDep,
    lab: LabDep,
    limiter: LabLimiter,
    guest_limiter: LabGuestLimiter,
    new_guest_limiter: GuestLimiter,
) -> LabRunPublic:
    run = _start(request, session, settings, lab, (limiter, guest_limiter, new_guest_limiter), body)
    return LabRunPublic.model_validate(run_json(run, settings))


@router.get("/runs", response_model=list[LabRunPublic], response_model_exclude_unset=True)
def api_list(session: SessionDep, settings: SettingsDep, user: Visitor) -> list[LabRunPublic]:
    runs = recent_runs(session=session, user_id=user.id, limit=20)
    # Without results: a list says how each run went; one run's page has what it found.
    return [
        LabRunPublic.model_validate({k: v for k, v in run_json(r, settings).items() if k != "result"})
        for r in runs
    ]


@router.get(
    "/runs/{run_id}",
    response_model=LabRunPublic,
    response_model_exclude_unset=True,
    responses=refusals(NotFound),
)
def api_get(run_id: str, session: SessionDep, settings: SettingsDep, user: Visitor) -> LabRunPublic:
    return LabRunPublic.model_validate(run_json(_load_run(session, user.id, run_id), settings))


@pages.get("", response_class=HTMLResponse)
def lab_page(request: Request, session: SessionDep, settings: SettingsDep, user: Visitor) -> HTMLResponse:
    runs = recent_runs(session=session, user_id=user.id, limit=10)
    return templates.TemplateResponse(
        request,
        "lab/index.html",
        {
            "runs": [run_json(r, settings) for r in runs],
            "experiments": EXPERIMENT_TITLES,
            "run_heading": run_heading,
            "sizes": list(SIZES),
            "seed": SEED,
        },
    )


@pages.post("", dependencies=[CsrfChecked])
def lab_form(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    lab: LabDep,
    limiter: LabLimiter,
    guest_limiter: LabGuestLimiter,
    new_guest_limiter: GuestLimiter,
    size: Annotated[str, Form()] = "full",
    experiments: Annotated[list[str] | None, Form()] = None,
) -> Response:
    body = LabRunCreate(size=size, experiments=experiments or [])
    try:
        run = _start(request, session, settings, lab, (limiter, guest_limiter, new_guest_limiter), body)
    except ServiceError as exc:
        flash(request, exc.message, "error")
        return RedirectResponse("/lab", status_code=303)
    return RedirectResponse(f"/lab/runs/{run.id}", status_code=303)


@pages.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(
    run_id: str, request: Request, session: SessionDep, settings: SettingsDep, user: Visitor
) -> HTMLResponse:
    run = run_json(_load_run(session, user.id, run_id), settings)
    return templates.TemplateResponse(
        request,
        "lab/run.html",
        {
            "run": run,
            "heading": run_heading(run["size"], run["experiments"]),
            "experiments": EXPERIMENT_TITLES,
            "known": list(EXPERIMENTS),
            "seed_positions": SEED["positions"],
        },
    )
