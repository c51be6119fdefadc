"""Runs of a challenge's visible examples (the page's Run button): their own sandbox slots.

A Run is synchronous for its caller (the answer carries the results) but never blocks the
event loop: the route hands it to a worker thread, where it waits for one of the Runs' own
`run_slots` (at most `run_slot_wait_s`, else 429) and then runs under the same limits as a
submission. The sandbox has `grading_workers + run_slots` slots (Settings.grader_limits), so
Runs, however many flood in, never hold a slot a submission's grading needs. A visitor who asks
again while a Run of theirs is still going is refused at once. The counts are per process:
`kvprep serve --workers N` has N fork servers, one budget each; the per-minute rate limits,
per visitor and per client address, are counted in the database for all of them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RunsInProgress:
    """Which visitors have a Run going in this process, and the Runs' sandbox slots."""

    def __init__(self, slots: int = 1) -> None:
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._slots = threading.BoundedSemaphore(max(1, slots))
        self._held = 0  # slots held now, for the tests that flood them

    @contextmanager
    def slot(self, wait_s: float) -> Iterator[bool]:
        """Yields True holding one of the Runs' slots (waiting at most wait_s), else False."""
        got = self._slots.acquire(timeout=wait_s)
        if got:
            with self._lock:
                self._held += 1
        try:
            yield got
        finally:
            if got:
                with self._lock:
                    self._held -= 1
                self._slots.release()

    def busy_slots(self) -> int:
        """How many of the Runs' slots are held now."""
        with self._lock:
            return self._held

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
