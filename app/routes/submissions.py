"""Submissions: queue code for grading, then poll for the verdict (CONTRACT.md)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.deps import CatalogDep, CurrentUser, SessionDep, SettingsDep, find_user
from app.models import Submission
from app.routes.challenges import find_challenge
from app.validation import ApiModel

router = APIRouter(prefix="/api", tags=["submissions"])
# The longest a long-poll may wait; a client asks again after an answer still "queued"/"running".
MAX_WAIT_S = 30.0


# The body of a submission.
class SubmissionCreate(ApiModel):
    code: str = Field(description="Python source defining the challenge's entry point")


def submission_json(submission: Submission) -> dict[str, Any]:
    if submission.status == "done" and submission.result is not None:
        return {**submission.result, "id": submission.id, "status": "done"}
    return {"id": submission.id, "status": submission.status}


@router.post("/challenges/{slug}/submissions", status_code=202)
def create_submission(
    slug: str,
    payload: SubmissionCreate,
    request: Request,
    catalog: CatalogDep,
    session: SessionDep,
    settings: SettingsDep,
    user: CurrentUser,
) -> JSONResponse:
    find_challenge(catalog, slug)
    if len(payload.code.encode("utf-8", "surrogatepass")) > settings.max_code_bytes:
        raise HTTPException(413, f"Code is over {settings.max_code_bytes // 1024} KiB")
    wait = request.app.state.submit_limiter.hit(f"{settings.queue_name}:submit:{user.id}")
    if wait:
        raise HTTPException(429, "You are submitting too fast", headers={"Retry-After": str(wait)})
    submission = request.app.state.grading.submit(
        session=session, user_id=user.id, challenge=slug, code=payload.code
    )
    return JSONResponse(submission_json(submission), status_code=202)


def _load_for(request: Request, submission_id: str) -> dict[str, Any] | None:
    """The submission's JSON for this visitor, or None when it is missing or someone else's."""
    with Session(request.app.state.engine) as session:
        user = find_user(request, session)
        submission = session.get(Submission, submission_id)
        # Someone else's submission is indistinguishable from a missing one.
        if submission is None or user is None or submission.user_id != user.id:
            return None
        return submission_json(submission)


@router.get("/submissions/{submission_id}")
async def get_submission(
    submission_id: str,
    request: Request,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_S,
            description="Long-poll: up to this many seconds, answer as soon as the verdict is stored",
        ),
    ] = 0,
) -> dict[str, Any]:
    found = await run_in_threadpool(_load_for, request, submission_id)
    if found is None:
        raise HTTPException(404, "Submission not found")
    if wait <= 0 or found["status"] == "done":
        return found
    waits = request.app.state.verdict_waits
    entry = waits.register(submission_id)
    deadline = time.monotonic() + wait
    try:
        while found is not None and found["status"] != "done":
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # Woken by our grading thread (with the verdict), or re-read for one another process stored.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(entry.event.wait(), min(left, waits.recheck_s))
            if entry.payload is not None:
                found = entry.payload
                break
            found = await run_in_threadpool(_load_for, request, submission_id)
    finally:
        waits.unregister(submission_id, entry)
    if found is None:
        raise HTTPException(404, "Submission not found")
    return found
