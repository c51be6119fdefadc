"""A visitor's own pages (the progress dashboard), kept per user until their data or the clock moves.

Building the dashboard reads every review, card and submission of the user and renders a long
page: ten milliseconds, most of a busy server's time. It changes only when the user writes
(a review, an undo, a submission or its verdict, a setting) or when time passes a card's due
moment or midnight. So a built page is kept under a version of the user's data read in one
query of indexed counts (`data_version`), valid until the next moment the clock changes it
(`valid_until`), and at most a minute, for the "in 3 hours" phrases. The version is read from
the database, not kept in memory, so a write through any server (or a `kvprep worker`'s
verdict) is seen by every server on its next request.

The session check is not kept: each request still finds its account in the database first,
so a log-out or a new password elsewhere ends the session here at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime, timedelta

from sqlalchemy import func, text
from sqlmodel import Session, col, select

from app.models import CardProgress, User
from app.services.card_status import _aware
from app.services.scheduling import start_of_day

# Users whose pages a process keeps at once (least recently used go first).
PERSONAL_PAGE_ENTRIES = 2048
# The longest a kept page is shown: its relative times ("in 3 hours") drift by at most this.
MAX_AGE = timedelta(seconds=60)

# Counts and largest ids of the user's rows that a dashboard shows: any write moves one of them
# (a review or an undo: the review count; a verdict: the count of verdicts; a new card: the
# progress count). Each is an index range scan on user_id.
_VERSION_SQL = text(
    """
    SELECT
      (SELECT count(*) FROM review WHERE user_id = :u),
      (SELECT max(id) FROM review WHERE user_id = :u),
      (SELECT count(*) FROM cardprogress WHERE user_id = :u),
      (SELECT count(*) FROM submission WHERE user_id = :u),
      (SELECT count(verdict) FROM submission WHERE user_id = :u),
      (SELECT max(id) FROM submission WHERE user_id = :u)
    """
)


def data_version(session: Session, user: User) -> tuple[object, ...]:
    """What a user's dashboard is built from, as one comparable value: their rows' counts and
    their settings (the user row, already read by the session check)."""
    row = session.execute(_VERSION_SQL, {"u": user.id}).one()
    settings = tuple(getattr(user, name) for name in sorted(User.model_fields) if name != "password_hash")
    return (*row, *settings)


def valid_until(session: Session, user: User, now: datetime) -> datetime:
    """The first moment after `now` at which the dashboard reads differently without a write:
    a card falls due, a card enters the coming week, midnight, or MAX_AGE."""
    limit = min(now + MAX_AGE, start_of_day(now) + timedelta(days=1))
    for after, shift in ((now, timedelta(0)), (now + timedelta(days=7), timedelta(days=7))):
        due = session.execute(
            select(func.min(CardProgress.due)).where(
                CardProgress.user_id == user.id, col(CardProgress.due) > after
            )
        ).scalar()
        if due is not None:
            limit = min(limit, _aware(due) - shift)
    return limit


class PersonalPages:
    """Pages kept per (user, page name): the body, its data version, and from when until when it holds."""

    def __init__(self, entries: int = PERSONAL_PAGE_ENTRIES) -> None:
        self._entries = entries
        self._kept: OrderedDict[tuple[int, str], tuple[tuple[object, ...], datetime, datetime, bytes]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(self, user_id: int, name: str, version: tuple[object, ...], now: datetime) -> bytes | None:
        with self._lock:
            entry = self._kept.get((user_id, name))
            if entry is None:
                return None
            kept_version, built, until, body = entry
            if kept_version != version or not built <= now < until:
                del self._kept[(user_id, name)]
                return None
            self._kept.move_to_end((user_id, name))
            return body

    def put(
        self,
        user_id: int,
        name: str,
        version: tuple[object, ...],
        built: datetime,
        until: datetime,
        body: bytes,
    ) -> None:
        with self._lock:
            self._kept[(user_id, name)] = (version, built, until, body)
            self._kept.move_to_end((user_id, name))
            while len(self._kept) > self._entries:
                self._kept.popitem(last=False)
