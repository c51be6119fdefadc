"""A visitor's own pages (the dashboard, the quiz start page, the challenge list and pages, the card
list), kept per user until their data or the clock moves.

A personal page reads the user's reviews, progress and submissions: milliseconds of queries and
rendering, most of a busy server's time. It changes only when the user writes (a review, an
undo, a quiz, a submission or its verdict, a setting) or when time passes a card's due moment or
midnight. So a built page is kept under a version of the user's data read in one query of
indexed counts (`data_version`), valid until the next moment the clock changes it
(`valid_until`), and at most a minute, for the "in 3 hours" phrases.

How fresh a kept page is, without asking the database on every request: writes through this
process drop the writer's pages at once (`PersonalPages.forget`, called after every request that
is not a GET, and when a verdict is stored). Writes elsewhere (another server, a `kvprep worker`'s
verdict) and a log-out or a new password elsewhere are seen at the next check of the version and
the session, at most RECHECK after the last one: a kept page is served without a query only
while the session check and the version read that last confirmed it are younger than that.
Everything but these GET pages (every API call, every form, every write) checks the session in
the database on every request.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
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
# How long a confirmed page is served without asking the database again (monotonic seconds): a
# write, a log-out or a new password through another server shows here within this time. Once it
# has passed, one request rechecks while the others are served the page for at most another
# RECHECK_S (so within 2 x RECHECK_S in all): fifty connections on one account used to recheck at
# once, each its own session check and version query on the thread pool, every half second.
RECHECK_S = 0.5

# Counts, largest ids and latest times of the user's rows that a personal page shows: any write
# moves one of them (a review: the review count; an undo and a new rating after it, which may
# reuse the undone row's id: the latest review time; a verdict: the count of verdicts; a new card:
# the progress count; a quiz begun or finished: the quiz counts). Each is an index range scan on
# user_id.
_VERSION_SQL = text(
    """
    SELECT
      (SELECT count(*) FROM review WHERE user_id = :u),
      (SELECT max(id) FROM review WHERE user_id = :u),
      (SELECT max(reviewed_at) FROM review WHERE user_id = :u),
      (SELECT count(*) FROM cardprogress WHERE user_id = :u),
      (SELECT count(*) FROM submission WHERE user_id = :u),
      (SELECT count(verdict) FROM submission WHERE user_id = :u),
      (SELECT max(id) FROM submission WHERE user_id = :u),
      (SELECT count(*) FROM quizsession WHERE user_id = :u),
      (SELECT count(finished_at) FROM quizsession WHERE user_id = :u)
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


@dataclass
class _Kept:
    version: tuple[object, ...]
    built: datetime  # the page's own clock: it holds from `built` until `until`
    until: datetime
    body: bytes
    credential: str  # the session credential that the last check found valid
    checked: float  # time.monotonic() of that check
    rechecking: float = 0.0  # time.monotonic() at which one request went to recheck it, 0 if none


class PersonalPages:
    """Pages kept per (user, page key): the body, its data version, from when until when it holds,
    and when the session and the version were last confirmed against the database."""

    def __init__(self, entries: int = PERSONAL_PAGE_ENTRIES, recheck_s: float = RECHECK_S) -> None:
        self._entries = entries
        self._recheck_s = recheck_s
        self._expired_grace = timedelta(seconds=recheck_s)  # on the app's clock, for `recent`
        self._kept: OrderedDict[tuple[int, str], _Kept] = OrderedDict()
        self._keys_of: dict[int, set[str]] = {}
        self._lock = threading.Lock()

    def recent(self, user_id: int, name: str, credential: str, now: datetime) -> bytes | None:
        """The kept page if a check younger than RECHECK found it current for this credential:
        served with no query at all. Past that, or once the clock reaches the page's `until`, the
        first caller gets None (it checks, and rebuilds the page if it must); while it does (up to
        RECHECK_S more), the others still get the page, an expired one for at most RECHECK_S past
        its `until`. Fifty connections on one account used to rebuild /progress at once when its
        minute ran out (p99 220-265 ms under wrk, 11-13 ms between those moments)."""
        with self._lock:
            entry = self._kept.get((user_id, name))
            if entry is None or entry.credential != credential or not entry.built <= now:
                return None
            if now >= entry.until + self._expired_grace:
                return None
            clock = time.monotonic()
            if now >= entry.until or clock - entry.checked >= self._recheck_s:
                if entry.rechecking == 0.0 or clock - entry.rechecking >= self._recheck_s:
                    entry.rechecking = clock  # this caller rechecks (or takes over a stalled one)
                    return None
            self._kept.move_to_end((user_id, name))
            return entry.body

    def get(
        self, user_id: int, name: str, version: tuple[object, ...], now: datetime, credential: str = ""
    ) -> bytes | None:
        """The kept page if its version is `version` (just read) and the clock has not moved past
        it; the session check that preceded this call confirms it for `credential` from now."""
        with self._lock:
            entry = self._kept.get((user_id, name))
            if entry is None:
                return None
            if entry.version != version or now < entry.built:
                self._drop(user_id, name)
                return None
            if now >= entry.until:  # rebuilt by this caller; the others get it meanwhile (`recent`)
                return None
            entry.credential, entry.checked, entry.rechecking = credential, time.monotonic(), 0.0
            self._kept.move_to_end((user_id, name))
            return entry.body

    def put(
        self,
        user_id: int,
        name: str,
        version: tuple[object, ...],
        built: datetime,
        until: datetime,
        body: bytes,
        credential: str = "",
    ) -> None:
        with self._lock:
            self._kept[(user_id, name)] = _Kept(version, built, until, body, credential, time.monotonic())
            self._kept.move_to_end((user_id, name))
            self._keys_of.setdefault(user_id, set()).add(name)
            while len(self._kept) > self._entries:
                (old_user, old_name), _ = next(iter(self._kept.items()))
                self._drop(old_user, old_name)

    def discard(self, user_id: int, name: str) -> None:
        """Drop one kept page (its recheck found the session no longer valid)."""
        with self._lock:
            self._drop(user_id, name)

    def forget(self, user_id: int) -> None:
        """Drop every page kept for this user (they wrote something through this process)."""
        with self._lock:
            for name in list(self._keys_of.get(user_id, ())):
                self._drop(user_id, name)

    def _drop(self, user_id: int, name: str) -> None:
        self._kept.pop((user_id, name), None)
        names = self._keys_of.get(user_id)
        if names is not None:
            names.discard(name)
            if not names:
                del self._keys_of[user_id]
