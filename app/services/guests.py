"""Guest rows: removing the ones that never kept anything.

A guest gets a user row only when it stores something (deps.current_user). A row can still
end up empty (a guest that started something and later deleted it); those idle past
`guest_idle_days` are deleted at start-up and by `kvprep purge-guests`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, exists
from sqlmodel import Session, col, select

from app.models import User, utcnow
from app.services.accounts import USER_TABLES

# Every table whose rows belong to a user (one list, kept by accounts.py): a guest with a row
# in any of them is kept.
OWNED = USER_TABLES


def purge_idle_guests(*, session: Session, idle_days: int, now: datetime | None = None) -> int:
    """Delete guests created more than `idle_days` ago that own nothing and set nothing; how many."""
    cutoff = (now or utcnow()) - timedelta(days=idle_days)
    empty = (
        select(User.id)
        .where(
            col(User.email).is_(None),
            col(User.created_at) < cutoff,
            col(User.desired_retention).is_(None),
            col(User.interview_date).is_(None),
        )
        .where(*(~exists().where(table.__table__.c.user_id == col(User.id)) for table in OWNED))  # type: ignore[attr-defined]
    )
    ids = list(session.exec(empty).all())
    if ids:
        session.execute(delete(User).where(col(User.id).in_(ids)))
        session.commit()
    return len(ids)
