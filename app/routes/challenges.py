"""Coding challenges: the JSON API (/api/challenges) and the pages (/challenges)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool

from app.content.catalog import Catalog
from app.content.challenges import Challenge
from app.cookie_session import has_no_user_row
from app.deps import CatalogDep, SessionDep, Visitor, find_user
from app.models import Submission
from app.pages import guest_cached
from app.web import templates

router = APIRouter(prefix="/api/challenges", tags=["challenges"])
pages = APIRouter(prefix="/challenges", tags=["pages"], include_in_schema=False)


def find_challenge(catalog: Catalog, slug: str) -> Challenge:
    challenge = catalog.challenge(slug)
    if challenge is None:
        raise HTTPException(404, "Challenge not found")
    return challenge


def challenge_summary(c: Challenge) -> dict[str, Any]:
    return {
        "slug": c.slug,
        "title": c.meta.title,
        "difficulty": c.meta.difficulty.value,
        "summary": c.meta.summary,
        "entry_point": c.meta.entry_point,
        "topics": c.meta.topics,
    }


def user_history(session: Session, user_id: int, slug: str, limit: int = 20) -> list[Submission]:
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


@router.get("")
def list_challenges(catalog: CatalogDep) -> list[dict[str, Any]]:
    return [challenge_summary(c) for c in catalog.challenges]


@router.get("/{slug}")
def get_challenge(slug: str, catalog: CatalogDep) -> dict[str, Any]:
    c = find_challenge(catalog, slug)
    return {**challenge_summary(c), "prompt": c.prompt, "starter_code": c.starter, "hints": c.meta.hints}


@router.get("/{slug}/solution")
def get_solution(slug: str, catalog: CatalogDep, session: SessionDep, user: Visitor) -> dict[str, str]:
    c = find_challenge(catalog, slug)
    if not has_attempted(session, user.id or 0, slug):
        raise HTTPException(403, "Submit a first attempt to see the worked solution")
    return {"slug": slug, "solution": c.solution}


@router.get("/{slug}/submissions")
def my_submissions(
    slug: str, catalog: CatalogDep, session: SessionDep, user: Visitor
) -> list[dict[str, Any]]:
    find_challenge(catalog, slug)
    return [
        {"id": s.id, "status": s.status, "verdict": s.verdict, "created_at": s.created_at.isoformat()}
        for s in user_history(session, user.id or 0, slug)
    ]


@pages.get("", response_class=HTMLResponse)
def challenge_list_page(
    request: Request, catalog: CatalogDep, session: SessionDep, user: Visitor
) -> HTMLResponse:
    best: dict[str, str] = {}
    for slug, verdict in session.exec(
        select(Submission.challenge, Submission.verdict).where(Submission.user_id == user.id)
    ).all():
        if verdict == "passed" or slug not in best:
            best[slug] = "passed" if verdict == "passed" else "attempted"
    return templates.TemplateResponse(
        request, "challenges/list.html", {"challenges": catalog.challenges, "status": best}
    )


@pages.get("/{slug}", response_class=HTMLResponse)
async def challenge_page(slug: str, request: Request, catalog: CatalogDep) -> Response:
    c = find_challenge(catalog, slug)

    def page(history: list[Submission]) -> Response:
        return templates.TemplateResponse(
            request, "challenges/detail.html", {"challenge": c, "history": history}
        )

    if not has_no_user_row(request):
        return page(await run_in_threadpool(_history_for, request, slug))

    # A visitor without a user row has no history: the page is the same for all of them.
    async def render() -> Response:
        return page([])

    return await guest_cached(request, ("challenge", slug, "no-row"), render, needs_no_row=True)


def _history_for(request: Request, slug: str) -> list[Submission]:
    with Session(request.app.state.engine) as session:
        user = find_user(request, session)
        return user_history(session, user.id, slug) if user is not None and user.id else []
