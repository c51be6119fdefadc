"""Reading a visitor's challenge submissions: their history, their standing per challenge, one of
them by id (someone else's is indistinguishable from a missing one)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, col, select

from app.models import Submission
from graders.verdict import Verdict


def user_history(*, session: Session, user_id: int, slug: str, limit: int = 20) -> list[Submission]:
    """The visitor's latest attempts at a challenge, newest first."""
    return list(
        session.exec(
            select(Submission)
            .where(Submission.user_id == user_id, Submission.challenge == slug)
            .order_by(col(Submission.created_at).desc())
            .limit(limit)
        ).all()
    )


def has_attempted(*, session: Session, user_id: int, slug: str) -> bool:
    return bool(user_history(session=session, user_id=user_id, slug=slug, limit=1))


# How far the visitor got with one challenge, for the list.
@dataclass(frozen=True)
class Standing:
    attempts: int
    passed: bool


def standings(*, session: Session, user_id: int) -> dict[str, Standing]:
    """Per challenge the visitor tried: how many attempts, and whether one passed."""
    tally: dict[str, tuple[int, bool]] = {}
    for slug, verdict in session.exec(
        select(Submission.challenge, Submission.verdict).where(Submission.user_id == user_id)
    ).all():
        attempts, passed = tally.get(slug, (0, False))
        tally[slug] = (attempts + 1, passed or verdict == Verdict.PASSED)
    return {slug: Standing(attempts, passed) for slug, (attempts, passed) in tally.items()}


def own_submission(*, session: Session, user_id: int | None, submission_id: str) -> Submission | None:
    """The submission, detached from its session, when it is this user's; None otherwise."""
    submission = session.get(Submission, submission_id)
    if submission is None or user_id is None or submission.user_id != user_id:
        return None
    session.expunge(submission)
    return submission
