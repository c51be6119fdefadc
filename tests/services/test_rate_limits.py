"""Every rate limit is hit through RateLimiter.check: the refusal is a TooManyRequests saying how
long to wait, in its message and as its retry_after."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.services.errors import TooManyRequests
from app.services.rate_limits import Limiters
from app.services.ratelimit import RateLimiter


def test_check_lets_the_allowed_events_through_then_says_how_long_to_wait() -> None:
    limiter = RateLimiter("2/minute", "memory://")
    limiter.check("k", "slow down")
    limiter.check("k", "slow down")
    with pytest.raises(TooManyRequests) as refused:
        limiter.check("k", "Too many tries: try again in {wait} s", "password")
    wait = refused.value.retry_after
    assert 1 <= wait <= 60
    assert refused.value.message == f"Too many tries: try again in {wait} s"
    assert (refused.value.status, refused.value.field) == (429, "password")
    limiter.check("another key", "slow down")  # each key counts apart


def test_the_bundle_takes_each_rule_from_its_setting() -> None:
    settings = Settings(database_url="sqlite://", redis_url="memory://", signups_per_hour=1)
    limiters = Limiters.for_settings(settings, engine=None)  # type: ignore[arg-type]
    limiters.signup.check("ip", "no")
    with pytest.raises(TooManyRequests):
        limiters.signup.check("ip", "no")
    limiters.login.check("ip", "no")  # another limiter, another count
