"""Coding challenges: the JSON API (/api/challenges) and the pages (/challenges)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool

from app.content.challenges import Challenge
from app.cookie_session import has_no_user_row
from app.deps import CatalogDep, ChallengeDep, SessionDep, Visitor, find_user
from app.models import Submission
from app.pages import guest_cached
from app.routes.challenge_models import (
    ChallengePublic,
    ChallengeSolution,
    ChallengeSummary,
    SubmissionSummary,
    challenge_public,
    challenge_summary,
    submission_public,
    submission_summary,
)
from app.web import templates
from graders.verdict import Verdict

router = APIRouter(prefix="/api/challenges", tags=["challenges"])
pages = APIRouter(prefix="/challenges", tags=["pages"], include_in_schema=False)


def user_history(session: Session, user_id: int, slug: str, limit: int = 20) -> list[Submission]:
    """The visitor's latest attempts at a challenge, newest first."""
    return list(
        session.exec(
            select(Submission)
            .where(Submission.user_id == user_id, Submission.challenge == slug)
            .order_by(col(Submission.created_at).desc())
            .limit(limit)
        ).all()
    )


def has_attempted(session: Session, user_id: int, slug: str) -> bool:
    return bool(user_history(session, user_id, slug, limit=1))


@router.get("", response_model=list[ChallengeSummary])
def list_challenges(catalog: CatalogDep) -> list[ChallengeSummary]:
    return [challenge_summary(c) for c in catalog.challenges]


@router.get("/{slug}", response_model=ChallengePublic)
def get_challenge(challenge: ChallengeDep) -> ChallengePublic:
    return challenge_public(challenge)


@router.get("/{slug}/solution", response_model=ChallengeSolution)
def get_solution(challenge: ChallengeDep, session: SessionDep, user: Visitor) -> ChallengeSolution:
    if not has_attempted(session, user.id or 0, challenge.slug):
        raise HTTPException(403, "Submit a first attempt to see the worked solution")
    return ChallengeSolution(slug=challenge.slug, solution=challenge.solution)


@router.get("/{slug}/submissions", response_model=list[SubmissionSummary])
def my_submissions(challenge: ChallengeDep, session: SessionDep, user: Visitor) -> list[SubmissionSummary]:
    return [submission_summary(s) for s in user_history(session, user.id or 0, challenge.slug)]


# How far the visitor got with one challenge, for the list.
@dataclass(frozen=True)
class Standing:
    attempts: int
    passed: bool


def standings(session: Session, user_id: int) -> dict[str, Standing]:
    """Per challenge the visitor tried: how many attempts, and whether one passed."""
    tally: dict[str, tuple[int, bool]] = {}
    for slug, verdict in session.exec(
        select(Submission.challenge, Submission.verdict).where(Submission.user_id == user_id)
    ).all():
        attempts, passed = tally.get(slug, (0, False))
        tally[slug] = (attempts + 1, passed or verdict == Verdict.PASSED)
    return {slug: Standing(attempts, passed) for slug, (attempts, passed) in tally.items()}


@pages.get("", response_class=HTMLResponse)
async def challenge_list_page(request: Request, catalog: CatalogDep) -> Response:
    def page(found: dict[str, Standing]) -> Response:
        context = {"challenges": catalog.challenges, "standings": found}
        return templates.TemplateResponse(request, "challenges/list.html", context)

    if not has_no_user_row(request):
        # One thread-pool hop for the session check and the visitor's attempts.
        return page(await run_in_threadpool(_standings_for, request))

    # A visitor without a user row has tried nothing: the list is the same for all of them.
    async def render() -> Response:
        return page({})

    return await guest_cached(request, ("challenges", "no-row"), render, needs_no_row=True)


def _standings_for(request: Request) -> dict[str, Standing]:
    with Session(request.app.state.engine) as session:
        user = find_user(request, session)
        return standings(session, user.id) if user is not None and user.id else {}


@pages.get("/{slug}", response_class=HTMLResponse)
async def challenge_page(request: Request, challenge: ChallengeDep) -> Response:
    def page(history: list[Submission]) -> Response:
        # The latest attempt's verdict is shown again after a reload (polled if still grading).
        last = submission_public(history[0]).model_dump(mode="json", exclude_none=True) if history else None
        return templates.TemplateResponse(
            request,
            "challenges/detail.html",
            {
                "challenge": challenge,
                "attempts": [submission_summary(s) for s in history],
                "last_submission": last,
            },
        )

    if not has_no_user_row(request):
        return page(await run_in_threadpool(_history_for, request, challenge))

    # A visitor without a user row has no history: the page is the same for all of them.
    async def render() -> Response:
        return page([])

    return await guest_cached(request, ("challenge", challenge.slug, "no-row"), render, needs_no_row=True)


def _history_for(request: Request, challenge: Challenge) -> list[Submission]:
    with Session(request.app.state.engine) as session:
        user = find_user(request, session)
        return user_history(session, user.id, challenge.slug) if user is not None and user.id else []
