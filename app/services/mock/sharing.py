"""Sharing a scored interview's report by a read-only link, and revoking the link."""

from __future__ import annotations

import secrets

from sqlmodel import Session, select

from app.models import MockInterview
from app.services.errors import Conflict

# A revoked link's token stays in the row under this prefix (no lookup matches it as a live
# token), so that opening the old link can say it was revoked rather than that nothing is there.
REVOKED = "revoked:"


def get_shared(*, session: Session, token: str) -> MockInterview | None:
    if not token or len(token) > 64 or token.startswith(REVOKED):
        return None
    mock = session.exec(select(MockInterview).where(MockInterview.share_token == token)).first()
    return mock if mock is not None and mock.scored_at is not None else None


def active_token(mock: MockInterview) -> str | None:
    """The live share token, or None when the report is not shared (never shared, or revoked)."""
    token = mock.share_token
    return token if token and not token.startswith(REVOKED) else None


def share(*, session: Session, mock: MockInterview) -> str:
    """The report's read-only link token: made once, kept until revoked."""
    if mock.scored_at is None:
        raise Conflict("Score the interview before sharing its report.")
    token = active_token(mock)
    if token is None:
        token = secrets.token_urlsafe(24)
        mock.share_token = token
        session.add(mock)
        session.commit()
        session.refresh(mock)
    return token


def revoke(*, session: Session, mock: MockInterview) -> None:
    """The old link stops opening the report (it answers 410, revoked); sharing again makes a new one."""
    token = active_token(mock)
    if token is None:
        return
    mock.share_token = REVOKED + token
    session.add(mock)
    session.commit()


def was_revoked(*, session: Session, token: str) -> bool:
    """Whether this token opened a report until its owner revoked it (the latest revoked link)."""
    if not token or len(token) > 64 - len(REVOKED) or token.startswith(REVOKED):
        return False
    marker = REVOKED + token
    return (
        session.exec(select(MockInterview.id).where(MockInterview.share_token == marker)).first() is not None
    )
