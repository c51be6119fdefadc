"""Runs of a challenge's visible examples (the page's Run button): one at a time per visitor.

A Run is synchronous for its caller (the answer carries the results) but never blocks the
event loop: the route hands it to a worker thread, where it waits for one of the sandbox's
worker slots (shared with grading, so runs and submissions together never start more
children than `grading_workers` allows) and then runs under the same limits as a submission.
A visitor who asks again while a Run of theirs is still going is refused at once, so one
visitor cannot fill the slots. The count is per process: `kvprep serve --workers N` lets a
visitor hold one Run in each, still capped by the per-minute rate limit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RunsInProgress:
    """Which visitors have a Run going in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[str] = set()

    @contextmanager
    def claim(self, visitor: str) -> Iterator[bool]:
        """Yields True when this visitor had no Run going (and holds the claim until the block ends)."""
        with self._lock:
            busy = visitor in self._running
            self._running.add(visitor)
        try:
            yield not busy
        finally:
            if not busy:
                with self._lock:
                    self._running.discard(visitor)

    def __contains__(self, visitor: str) -> bool:
        with self._lock:
            return visitor in self._running

    def __len__(self) -> int:
        with self._lock:
            return len(self._running)
