"""A `limits` storage in a SQLite file, so the processes of one server count together.

`limits` ships memory (one process) and network stores (Redis, Memcached, MongoDB). A
multi-process server without Redis needs its processes to share counts on one machine: this
is the moving-window store on a small SQLite file (WAL; a write only per counted event, never
per page). Registered as the scheme `kvprep-sqlite:///<path>` for `storage_from_string`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from limits.storage import MovingWindowSupport, Storage

_SCHEMA = """
create table if not exists hit (key text not null, at real not null);
create index if not exists hit_key_at on hit (key, at);
create table if not exists counter (key text primary key, value integer not null, expires real not null);
"""


class SqliteStorage(Storage, MovingWindowSupport):
    STORAGE_SCHEME = ["kvprep-sqlite"]

    def __init__(self, uri: str, wrap_exceptions: bool = False, **options: float | str | bool) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.path = Path(uri.removeprefix("kvprep-sqlite://"))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._db() as db:
            db.executescript(_SCHEMA)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            # isolation_level=None: we open our own transactions (BEGIN IMMEDIATE serialises writers).
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            db.execute("pragma journal_mode=wal")
            db.execute("pragma synchronous=normal")
            self._local.db = db
        return db

    @property
    def base_exceptions(self) -> type[Exception]:
        return sqlite3.Error

    # -- the moving window (what RateLimiter uses) -------------------------------------------

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        now = time.time()
        db = self._db()
        db.execute("begin immediate")
        try:
            db.execute("delete from hit where key = ? and at < ?", (key, now - expiry))
            (count,) = db.execute("select count(*) from hit where key = ?", (key,)).fetchone()
            if count + amount > limit:
                db.execute("commit")
                return False
            db.executemany("insert into hit (key, at) values (?, ?)", [(key, now)] * amount)
            db.execute("commit")
            return True
        except BaseException:
            db.execute("rollback")
            raise

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        now = time.time()
        oldest, count = (
            self._db()
            .execute("select min(at), count(*) from hit where key = ? and at >= ?", (key, now - expiry))
            .fetchone()
        )
        return (oldest if oldest is not None else now), int(count)

    # -- fixed-window counters (the rest of the Storage interface) ---------------------------

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        now = time.time()
        db = self._db()
        db.execute("begin immediate")
        try:
            db.execute("delete from counter where key = ? and expires <= ?", (key, now))
            db.execute(
                "insert into counter (key, value, expires) values (?, ?, ?) "
                "on conflict (key) do update set value = value + excluded.value",
                (key, amount, now + expiry),
            )
            (value,) = db.execute("select value from counter where key = ?", (key,)).fetchone()
            db.execute("commit")
            return int(value)
        except BaseException:
            db.execute("rollback")
            raise

    def get(self, key: str) -> int:
        row = (
            self._db()
            .execute("select value from counter where key = ? and expires > ?", (key, time.time()))
            .fetchone()
        )
        return int(row[0]) if row else 0

    def get_expiry(self, key: str) -> float:
        row = self._db().execute("select expires from counter where key = ?", (key,)).fetchone()
        return float(row[0]) if row else time.time()

    def check(self) -> bool:
        self._db().execute("select 1")
        return True

    def reset(self) -> int | None:
        db = self._db()
        hits = db.execute("delete from hit").rowcount
        counters = db.execute("delete from counter").rowcount
        return int(hits + counters)

    def clear(self, key: str) -> None:
        db = self._db()
        db.execute("delete from hit where key = ?", (key,))
        db.execute("delete from counter where key = ?", (key,))
