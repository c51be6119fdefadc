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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from anyio import to_thread

from app.config import Settings
from app.services.errors import InvalidInput, TooManyRequests
from graders.examples import InvalidRunInput, spec_for
from graders.examples.run import RunResult, run_examples


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


def run_schema(slug: str) -> dict[str, Any]:
    """The challenge's visible examples and the parameters of its custom input, as the API sends them."""
    return {"challenge": slug, **spec_for(slug).to_json()}


def custom_values(slug: str, given: Mapping[str, object] | None) -> dict[str, Any] | None:
    """The custom input checked against the challenge's parameters, defaults filled in (None: none
    given). InvalidInput points at the refused parameter (["body", "input", name])."""
    if given is None:
        return None
    try:
        return spec_for(slug).validate(given)
    except InvalidRunInput as exc:
        loc = ["body", "input", exc.field] if exc.field else ["body", "input"]
        raise InvalidInput(exc.message, loc=loc) from None


async def run_for(
    runs: RunsInProgress,
    visitor: str,
    settings: Settings,
    slug: str,
    code: str,
    values: dict[str, Any] | None,
) -> RunResult:
    """One Run of `visitor`'s code, in a worker thread; TooManyRequests while another of theirs runs."""
    with runs.claim(visitor) as claimed:
        if not claimed:
            raise TooManyRequests("Your previous run is still going: wait for its results", 1)
        return await to_thread.run_sync(_run_in_a_slot, runs, settings, slug, code, values)


def _run_in_a_slot(
    runs: RunsInProgress, settings: Settings, slug: str, code: str, values: dict[str, Any] | None
) -> RunResult:
    """The Run on one of the Runs' own sandbox slots; TooManyRequests when none frees up in time."""
    with runs.slot(settings.run_slot_wait_s) as got:
        if not got:
            raise TooManyRequests(
                "The server is busy running other people's code: try again in a few seconds",
                max(1, round(settings.run_slot_wait_s)),
            )
        return run_examples(slug, code, values, settings.grader_limits())
