"""Submissions: queue code for grading, then poll for the verdict (CONTRACT.md)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Annotated

from fastapi import APIRouter, Query, Request
from sqlalchemy import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.deps import (
    ChallengeDep,
    CurrentUser,
    EngineDep,
    GradingDep,
    SessionDep,
    SubmitAllowed,
    VerdictWaitsDep,
    find_user,
)
from app.models import Submission
from app.routes.challenge_models import (
    SubmissionCode,
    SubmissionPublic,
    SubmissionStatus,
    submission_code,
    submission_public,
    verdict_public,
)
from app.routes.refusals import refusals
from app.services.errors import NotFound
from app.services.submissions import own_submission

router = APIRouter(prefix="/api", tags=["submissions"])
# The longest a long-poll may wait; a client asks again after an answer still "queued"/"running".
MAX_WAIT_S = 30.0


@router.post(
    "/challenges/{slug}/submissions",
    status_code=202,
    response_model=SubmissionPublic,
    response_model_exclude_none=True,
)
def create_submission(
    challenge: ChallengeDep, code: SubmitAllowed, session: SessionDep, user: CurrentUser, grading: GradingDep
) -> SubmissionPublic:
    assert user.id is not None  # CurrentUser is a stored row
    submission = grading.submit(session=session, user_id=user.id, challenge=challenge.slug, code=code)
    return submission_public(submission)


def _own_submission(request: Request, engine: Engine, submission_id: str) -> Submission | None:
    """The visitor's submission, detached from its session; None when missing or someone else's."""
    with Session(engine) as session:
        user = find_user(request, session)
        user_id = user.id if user is not None else None
        return own_submission(session=session, user_id=user_id, submission_id=submission_id)


def _load_for(request: Request, engine: Engine, submission_id: str) -> SubmissionPublic | None:
    submission = _own_submission(request, engine, submission_id)
    return submission_public(submission) if submission is not None else None


@router.get(
    "/submissions/{submission_id}",
    response_model=SubmissionPublic,
    response_model_exclude_none=True,
    responses=refusals(NotFound),
)
async def get_submission(
    submission_id: str,
    request: Request,
    engine: EngineDep,
    waits: VerdictWaitsDep,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_S,
            description="Long-poll: up to this many seconds, answer as soon as the verdict is stored",
        ),
    ] = 0,
) -> SubmissionPublic:
    found = await run_in_threadpool(_load_for, request, engine, submission_id)
    if found is None:
        raise NotFound("Submission not found")
    if wait <= 0 or found.status == SubmissionStatus.DONE:
        return found
    entry = waits.register(submission_id)
    deadline = time.monotonic() + wait
    try:
        while found is not None and found.status != SubmissionStatus.DONE:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # Woken by our grading thread (with the verdict), or re-read for one another process stored.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(entry.event.wait(), min(left, waits.recheck_s))
            if entry.payload is not None:
                found = verdict_public(submission_id, entry.payload)
                break
            found = await run_in_threadpool(_load_for, request, engine, submission_id)
    finally:
        waits.unregister(submission_id, entry)
    if found is None:
        raise NotFound("Submission not found")
    return found


@router.get("/submissions/{submission_id}/code", response_model=SubmissionCode, responses=refusals(NotFound))
def get_submission_code(submission_id: str, request: Request, engine: EngineDep) -> SubmissionCode:
    """A past attempt's code, to read it again or load it into the editor (404 if not the visitor's)."""
    submission = _own_submission(request, engine, submission_id)
    if submission is None:
        raise NotFound("Submission not found")
    return submission_code(submission)
