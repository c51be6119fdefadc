"""The app's rate limits as one bundle: one RateLimiter per bucket family, each rule a setting.

They count in Redis when there is one, else in the app's database (app/services/ratelimit_db.py):
every process of the server counts together, and a restart forgets nothing. Routes reach one
through its Annotated alias in app/deps.py, and every hit goes through `RateLimiter.check`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from app.config import Settings
from app.services.ratelimit import RateLimiter
from app.services.ratelimit_db import DatabaseStorage


@dataclass
class Limiters:
    submit: RateLimiter  # code submissions per user (the challenge pages and mock interviews alike)
    login: RateLimiter  # log-in attempts per email from one client
    login_ip: RateLimiter  # log-in attempts per client over all emails
    login_email: RateLimiter  # log-in attempts per email from everywhere
    signup: RateLimiter  # sign-ups per client address
    lab: RateLimiter  # lab runs per account
    lab_guest: RateLimiter  # lab runs of guests, per client address
    run_ip: RateLimiter  # the challenge page's Runs, per client address
    guest: RateLimiter  # new guest rows, per client address

    @classmethod
    def for_settings(cls, settings: Settings, engine: Engine) -> Limiters:
        storage: str | DatabaseStorage = settings.redis_url or DatabaseStorage(engine)
        return cls(
            submit=RateLimiter(f"{settings.submissions_per_minute}/minute", storage),
            login=RateLimiter(f"{settings.login_attempts_per_minute}/minute", storage),
            login_ip=RateLimiter(f"{settings.login_attempts_per_ip_per_minute}/minute", storage),
            login_email=RateLimiter(f"{settings.login_attempts_per_email_per_hour}/hour", storage),
            signup=RateLimiter(f"{settings.signups_per_hour}/hour", storage),
            lab=RateLimiter(f"{settings.lab_runs_per_hour}/hour", storage),
            lab_guest=RateLimiter(f"{settings.lab_guest_runs_per_address_per_hour}/hour", storage),
            run_ip=RateLimiter(f"{settings.runs_per_address_per_minute}/minute", storage),
            guest=RateLimiter(f"{settings.guests_per_hour}/hour", storage),
        )


def refuse_too_fast(limiter: RateLimiter, settings: Settings, bucket: str, message: str) -> None:
    """429 with Retry-After once `bucket` is over its per-minute count (blocking: the count lives in
    a SQLite file or Redis, so async callers run it in the thread pool)."""
    limiter.check(f"{settings.queue_name}:{bucket}", message)
