"""The server's clock, as a small object routes depend on, so tests can move time instead of sleeping.

The app reads `app.state.clock` when there is one (tests set a ManualClock there) and the
system clock otherwise. Every "now" a mock interview compares with its deadline comes from here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """The real time, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock tests move by hand: frozen at `start`, or (ticking=True) real time shifted by an offset."""

    def __init__(self, start: datetime | None = None, *, ticking: bool = False) -> None:
        self._start = start or datetime.now(UTC)
        self._ticking = ticking
        self._real_start = datetime.now(UTC)
        self._offset = timedelta()

    def now(self) -> datetime:
        elapsed = datetime.now(UTC) - self._real_start if self._ticking else timedelta()
        return self._start + elapsed + self._offset

    def advance(self, seconds: float) -> datetime:
        self._offset += timedelta(seconds=seconds)
        return self.now()

    def set(self, moment: datetime) -> None:
        self._offset += moment - self.now()


SYSTEM_CLOCK = SystemClock()
