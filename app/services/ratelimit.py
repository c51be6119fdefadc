"""Per-user and per-address rate limits (the `limits` library): in Redis when REDIS_URL is set,
else in the app's database (app/services/ratelimit_db.py), so every process of a server and a
restarted one count together; "memory://" only where a test asks for it."""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from app.services.errors import TooManyRequests


class RateLimiter:
    def __init__(self, rule: str, storage: str | Storage = "memory://") -> None:
        self._item: RateLimitItem = parse(rule)
        store = storage_from_string(storage) if isinstance(storage, str) else storage
        self._limiter = MovingWindowRateLimiter(store)

    def hit(self, key: str) -> int:
        """Count one event for key: 0 when allowed, else the seconds to wait before the next."""
        if self._limiter.hit(self._item, key):
            return 0
        reset = self._limiter.get_window_stats(self._item, key).reset_time
        return max(1, math.ceil(reset - time.time()))

    def check(self, key: str, message: str, field: str | None = None) -> None:
        """Count one event for key; past the limit, TooManyRequests with `message` ("{wait}" in it
        becomes the seconds to wait). Every limit a request can hit is checked here."""
        wait = self.hit(key)
        if wait:
            raise TooManyRequests(message.replace("{wait}", str(wait)), wait, field)
