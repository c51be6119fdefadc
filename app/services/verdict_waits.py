"""Requests waiting for a verdict (`GET /api/submissions/{id}?wait=S`), woken when it is stored.

The grading thread calls `notify(id)` right after committing the verdict; every request
waiting on that id in this process wakes at once. A verdict stored by another process (a
`kvprep worker`, another server process) is found by the waiting request's own re-reads of
the database every `recheck_s`.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict

Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Event]


class VerdictWaits:
    def __init__(self, recheck_s: float = 0.25) -> None:
        self.recheck_s = recheck_s
        self._waiting: defaultdict[str, set[Waiter]] = defaultdict(set)
        self._lock = threading.Lock()

    def register(self, submission_id: str) -> Waiter:
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiting[submission_id].add(entry)
        return entry

    def unregister(self, submission_id: str, entry: Waiter) -> None:
        with self._lock:
            waiting = self._waiting.get(submission_id)
            if waiting is not None:
                waiting.discard(entry)
                if not waiting:
                    del self._waiting[submission_id]

    def notify(self, submission_id: str) -> None:
        """From any thread: wake every request waiting on this submission."""
        with self._lock:
            waiting = list(self._waiting.get(submission_id, ()))
        for loop, event in waiting:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop has closed (the server is stopping)
                pass
