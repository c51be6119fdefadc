"""Submissions: queue code for grading, then poll for the verdict (CONTRACT.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import Field

from app.deps import CatalogDep, CurrentUser, SessionDep, SettingsDep
from app.models import Submission
from app.routes.challenges import find_challenge
from app.validation import ApiModel

router = APIRouter(prefix="/api", tags=["submissions"])


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


@router.get("/submissions/{submission_id}")
def get_submission(submission_id: str, session: SessionDep, user: CurrentUser) -> dict[str, Any]:
    submission = session.get(Submission, submission_id)
    # Someone else's submission is indistinguishable from a missing one.
    if submission is None or submission.user_id != user.id:
        raise HTTPException(404, "Submission not found")
    return submission_json(submission)
