"""What every visitor sees the same: the topics with their card counts, and rendered fragments.

Taken from the database once, after the bank is synced at start-up: the bank changes only
through a sync, and a server picks up a new bank when it restarts (as it does its challenges).
Nothing personal is kept here: progress, history and the header are rendered per request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlmodel import Session

from app.config import Settings
from app.models import User
from app.services.cards import topic_counts
from app.services.scheduling import DueCounts, new_card_quota


@dataclass(frozen=True)
class TopicView:
    slug: str
    title: str
    summary: str
    position: int


class FragmentCache:
    """Rendered HTML keyed by what it depends on; least recently used entries go first (bounded)."""

    def __init__(self, max_entries: int = 2048) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[object, ...], object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> object | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: tuple[object, ...], value: object) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def get_or_make(self, key: tuple[object, ...], make: Callable[[], object]) -> object:
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value)
        return value


@dataclass
class SiteContent:
    topics: list[TopicView]
    counts: dict[str, int]
    fragments: FragmentCache = field(default_factory=FragmentCache)
    guest_pages: GuestPages = field(init=False)

    def __post_init__(self) -> None:
        self.guest_pages = GuestPages(self.fragments)

    @property
    def live_cards(self) -> int:
        return sum(self.counts.values())

    def topic(self, slug: str) -> TopicView | None:
        return next((t for t in self.topics if t.slug == slug), None)

    def topic_counts(self) -> list[tuple[TopicView, int]]:
        return [(t, self.counts.get(t.slug, 0)) for t in self.topics]

    def fresh_visitor_counts(self, settings: Settings, now: datetime) -> DueCounts:
        """What a visitor with no user row has due: nothing reviewed, so only today's new cards."""
        unseen = self.live_cards
        new_today = new_card_quota(user=User(), settings=settings, unseen=unseen, introduced=0, now=now)
        return DueCounts(
            due_now=0,
            due_today=0,
            due_week=0,
            new_today=new_today,
            unseen=unseen,
            interview_days=None,
            retention=settings.desired_retention,
        )


def load_site_content(session: Session) -> SiteContent:
    pairs = topic_counts(session=session)
    topics = [TopicView(t.slug, t.title, t.summary, t.position) for t, _ in pairs]
    return SiteContent(topics=topics, counts={t.slug: n for t, n in pairs})


# Where a cached page had the visitor's CSRF token: each visitor gets their own back in its place.
CSRF_SLOT = b"\x00csrf-slot\x00"


def fill_csrf_slots(body: bytes, token: Callable[[], str]) -> bytes:
    """A kept page with the visitor's CSRF token in each slot (`token` runs only if there is one:
    it may mint the token into the session)."""
    return body.replace(CSRF_SLOT, token().encode()) if CSRF_SLOT in body else body


class GuestPages:
    """Whole pages as a guest sees them, when they are the same for every guest.

    A guest's header has no account in it, so a page that shows nothing of the visitor (a
    card, the lists) is one HTML document for all of them, kept after its first rendering.
    Pages with a form keep it too: the CSRF token is cut out and each visitor's put back.
    Never used for a signed-in visitor, nor while a flash message waits to be shown.
    """

    def __init__(self, cache: FragmentCache) -> None:
        self.cache = cache

    def get(self, key: tuple[object, ...], csrf: Callable[[], str]) -> bytes | None:
        page = self.cache.get(("page", *key))
        if not isinstance(page, bytes):
            return None
        return fill_csrf_slots(page, csrf)

    def put(
        self,
        key: tuple[object, ...],
        body: bytes,
        csrf_in_session: str | None,
        *,
        url: tuple[str, bytes] | None,
        needs_no_row: bool,
    ) -> None:
        """Keep a page under its key, and under its URL for `GuestPageShortcut` (app/pages.py)
        unless `url` is None (a page whose key holds more than its URL, such as the day)."""
        if csrf_in_session:
            body = body.replace(csrf_in_session.encode(), CSRF_SLOT)
        self.cache.put(("page", *key), body)
        if url is not None:
            self.cache.put(("url", *url), (needs_no_row, body))

    def by_url(self, path: str, query: bytes) -> tuple[bool, bytes] | None:
        """(whether only a visitor without a user row may have it, the page) for a URL, if kept."""
        entry = self.cache.get(("url", path, query))
        return entry if isinstance(entry, tuple) else None
