"""Requests waiting for a verdict (`GET /api/submissions/{id}?wait=S`), woken when it is stored.

The grading thread calls `notify(id, json)` right after committing the verdict: every request
waiting on that id in this process wakes at once and answers with that JSON (no second read).
A verdict stored by another process (a `kvprep worker`, another server process) is found by
the waiting request's own re-reads of the database every `recheck_s`.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from typing import Any


class Waiter:
    """One waiting request: its loop, the event that wakes it, and the verdict JSON once known."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()
        self.payload: dict[str, Any] | None = None


class VerdictWaits:
    def __init__(self, recheck_s: float = 0.25) -> None:
        self.recheck_s = recheck_s
        self._waiting: defaultdict[str, set[Waiter]] = defaultdict(set)
        self._lock = threading.Lock()

    def register(self, submission_id: str) -> Waiter:
        entry = Waiter()
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

    def notify(self, submission_id: str, payload: dict[str, Any]) -> None:
        """From any thread: wake every request waiting on this submission, with its verdict JSON."""
        with self._lock:
            waiting = list(self._waiting.get(submission_id, ()))
        for waiter in waiting:
            waiter.payload = payload
            try:
                waiter.loop.call_soon_threadsafe(waiter.event.set)
            except RuntimeError:  # that loop has closed (the server is stopping)
                pass
