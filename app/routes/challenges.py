"""Coding challenges: the JSON API (/api/challenges) and the pages (/challenges)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlmodel import Session

from app.cookie_session import has_no_user_row
from app.deps import CatalogDep, ChallengeDep, ClockDep, EngineDep, PersonalPagesDep, SessionDep, Visitor
from app.models import Submission, User
from app.pages import guest_cached
from app.personal_views import personal_page
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
from app.routes.refusals import refusals
from app.services.errors import Forbidden
from app.services.submissions import Standing, has_attempted, standings, user_history
from app.web import templates

router = APIRouter(prefix="/api/challenges", tags=["challenges"])
pages = APIRouter(prefix="/challenges", tags=["pages"], include_in_schema=False)


@router.get("", response_model=list[ChallengeSummary])
def list_challenges(catalog: CatalogDep) -> list[ChallengeSummary]:
    return [challenge_summary(c) for c in catalog.challenges]


@router.get("/{slug}", response_model=ChallengePublic)
def get_challenge(challenge: ChallengeDep) -> ChallengePublic:
    return challenge_public(challenge)


@router.get("/{slug}/solution", response_model=ChallengeSolution, responses=refusals(Forbidden))
def get_solution(challenge: ChallengeDep, session: SessionDep, user: Visitor) -> ChallengeSolution:
    if not has_attempted(session=session, user_id=user.id or 0, slug=challenge.slug):
        raise Forbidden("Submit a first attempt to see the worked solution")
    return ChallengeSolution(slug=challenge.slug, solution=challenge.solution)


@router.get("/{slug}/submissions", response_model=list[SubmissionSummary])
def my_submissions(challenge: ChallengeDep, session: SessionDep, user: Visitor) -> list[SubmissionSummary]:
    return [
        submission_summary(s)
        for s in user_history(session=session, user_id=user.id or 0, slug=challenge.slug)
    ]


@pages.get("", response_class=HTMLResponse)
async def challenge_list_page(
    request: Request, engine: EngineDep, kept: PersonalPagesDep, catalog: CatalogDep, clock: ClockDep
) -> Response:
    def page(found: dict[str, Standing]) -> Response:
        context = {"challenges": catalog.challenges, "standings": found}
        return templates.TemplateResponse(request, "challenges/list.html", context)

    if not has_no_user_row(request):

        def build(session: Session, user: User) -> Response:
            return page(standings(session=session, user_id=user.id) if user.id else {})

        return await personal_page(request, engine, kept, clock.now(), build)

    # A visitor without a user row has tried nothing: the list is the same for all of them.
    async def render() -> Response:
        return page({})

    return await guest_cached(request, ("challenges", "no-row"), render, needs_no_row=True)


@pages.get("/{slug}", response_class=HTMLResponse)
async def challenge_page(
    request: Request, engine: EngineDep, kept: PersonalPagesDep, challenge: ChallengeDep, clock: ClockDep
) -> Response:
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

        def build(session: Session, user: User) -> Response:
            return page(
                user_history(session=session, user_id=user.id, slug=challenge.slug) if user.id else []
            )

        return await personal_page(request, engine, kept, clock.now(), build)

    # A visitor without a user row has no history: the page is the same for all of them.
    async def render() -> Response:
        return page([])

    return await guest_cached(request, ("challenge", challenge.slug, "no-row"), render, needs_no_row=True)
