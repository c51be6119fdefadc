"""Per-user rate limits (the `limits` library): memory in one process, Redis when REDIS_URL is set."""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

import app.services.ratelimit_sqlite  # noqa: F401  (registers the kvprep-sqlite:// storage)


class RateLimiter:
    def __init__(self, rule: str, storage_url: str = "memory://") -> None:
        self._item: RateLimitItem = parse(rule)
        self._limiter = MovingWindowRateLimiter(storage_from_string(storage_url))

    def hit(self, key: str) -> int:
        """Count one event for key: 0 when allowed, else the seconds to wait before the next."""
        if self._limiter.hit(self._item, key):
            return 0
        reset = self._limiter.get_window_stats(self._item, key).reset_time
        return max(1, math.ceil(reset - time.time()))
