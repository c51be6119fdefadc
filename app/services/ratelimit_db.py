"""A `limits` storage in the app's own database, so every process of a server counts together.

`limits` ships memory (one process, forgotten at a restart) and network stores (Redis,
Memcached, MongoDB). Without Redis, the one store every process of a server already shares,
and that outlives a restart, is the database: each counted event is a row of rate_limit_hit
(app/models.py). Writers to one key take turns (SQLite serialises writers; PostgreSQL takes a
transaction-scoped advisory lock on the key), so a burst from many processes never admits
more than the limit.
"""

from __future__ import annotations

import hashlib
import random
import time

from limits.storage import MovingWindowSupport, Storage
from sqlalchemy import Connection, Engine, delete, func, insert, select, text
from sqlalchemy.exc import SQLAlchemyError

from app.models import RateLimitHit

HITS = RateLimitHit.__table__  # type: ignore[attr-defined]
# One hit in this many also sweeps every expired row, of every key (a key never hit again
# would otherwise keep its rows for ever).
SWEEP_ONE_IN = 200


class DatabaseStorage(Storage, MovingWindowSupport):
    """The moving window (what app/services/ratelimit.py uses) and fixed-window counters, on rows."""

    STORAGE_SCHEME = None  # built with an engine, never from a URL string

    def __init__(self, engine: Engine) -> None:
        super().__init__(None, wrap_exceptions=False)
        self.engine = engine
        self._postgres = engine.dialect.name == "postgresql"

    @property
    def base_exceptions(self) -> type[Exception]:
        return SQLAlchemyError

    def _serialise(self, conn: Connection, key: str) -> None:
        """Make concurrent writers of `key` take turns until this transaction ends."""
        if self._postgres:
            lock_id = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)
            conn.execute(text("select pg_advisory_xact_lock(:id)"), {"id": lock_id})
        # SQLite: the DELETE that follows is a write, and SQLite lets one writer in at a time.

    def _prune(self, conn: Connection, key: str, now: float) -> None:
        conn.execute(delete(HITS).where(HITS.c.key == key, HITS.c.expires <= now))
        if random.randrange(SWEEP_ONE_IN) == 0:
            conn.execute(delete(HITS).where(HITS.c.expires <= now))

    def _count(self, conn: Connection, key: str, since: float) -> int:
        return int(
            conn.execute(
                select(func.count()).select_from(HITS).where(HITS.c.key == key, HITS.c.at >= since)
            ).scalar_one()
        )

    # -- the moving window ------------------------------------------------------------------

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        now = time.time()
        with self.engine.begin() as conn:
            self._serialise(conn, key)
            self._prune(conn, key, now)
            if self._count(conn, key, now - expiry) + amount > limit:
                return False
            conn.execute(insert(HITS), [{"key": key, "at": now, "expires": now + expiry}] * amount)
            return True

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        now = time.time()
        with self.engine.connect() as conn:
            oldest, count = conn.execute(
                select(func.min(HITS.c.at), func.count())
                .select_from(HITS)
                .where(HITS.c.key == key, HITS.c.at >= now - expiry)
            ).one()
        return (float(oldest) if oldest is not None else now), int(count)

    # -- fixed-window counters: rows sharing the first hit's expiry -------------------------

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        now = time.time()
        with self.engine.begin() as conn:
            self._serialise(conn, key)
            self._prune(conn, key, now)
            current = conn.execute(select(func.min(HITS.c.expires)).where(HITS.c.key == key)).scalar()
            expires = float(current) if current is not None else now + expiry
            conn.execute(insert(HITS), [{"key": key, "at": now, "expires": expires}] * amount)
            return self._count(conn, key, 0.0)

    def get(self, key: str) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count())
                    .select_from(HITS)
                    .where(HITS.c.key == key, HITS.c.expires > time.time())
                ).scalar_one()
            )

    def get_expiry(self, key: str) -> float:
        with self.engine.connect() as conn:
            value = conn.execute(select(func.min(HITS.c.expires)).where(HITS.c.key == key)).scalar()
        return float(value) if value is not None else time.time()

    def check(self) -> bool:
        with self.engine.connect() as conn:
            conn.execute(select(1))
        return True

    def reset(self) -> int | None:
        with self.engine.begin() as conn:
            return int(conn.execute(delete(HITS)).rowcount)

    def clear(self, key: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(HITS).where(HITS.c.key == key))
