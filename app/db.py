"""The database engine, sessions, and the migrations entry point (Alembic)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, event
from sqlmodel import create_engine

from app.config import ROOT, Settings, get_settings

# Pool size above the server's thread pool (anyio's 40 threads) plus grading threads: a sync
# request whose session teardown waits for a thread while every thread waits for a connection
# would otherwise deadlock until the pool's timeout.
POOL_SIZE, POOL_OVERFLOW = 10, 50


class DatabaseFileError(RuntimeError):
    """A SQLite file kvprep needs is not a usable database; the message names it and says what to do."""


def check_sqlite_file(path: Path, what: str) -> None:
    """Refuse a damaged SQLite file with a message naming it, before anything trips over it.

    A missing or empty file is fine (it is created). `PRAGMA quick_check` reads every page, so a
    file damaged past its header is found too; kvprep's files are small enough for that at start-up.
    """
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as conn:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)").fetchall()]
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        raise DatabaseFileError(
            f"{path}: not a usable SQLite database ({'; '.join(problems)}). It is kvprep's {what}. "
            "Restore it from a backup, or move it away to start with an empty one."
        )


def check_sqlite_files(settings: Settings) -> None:
    """Every SQLite file these settings use: the database, the embedded queue, the rate limits."""
    if settings.database_url.startswith("sqlite:///"):
        path = settings.database_url.removeprefix("sqlite:///")
        if path != ":memory:":
            check_sqlite_file(Path(path), "database (DATABASE_URL)")
    if not settings.redis_url and settings.embedded_queue == "sqlite":
        check_sqlite_file(settings.queue_file, "grading queue (KVPREP_QUEUE_FILE)")


def private_file(path: Path) -> None:
    """Create `path` readable by its owner alone (0600), or make it so, with SQLite's side files.

    Created first by us, so SQLite opens rather than creates it; SQLite gives the -wal and -shm
    files the database file's mode. Files of another owner are left as they are.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_EXCL: an existing file is never opened here. Closing any descriptor of a SQLite file
    # drops every POSIX lock this process holds on it (SQLite's "how to corrupt" page, 2.2).
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if each.stat().st_mode & 0o077:
                os.chmod(each, 0o600)


def sqlite_path(url: str) -> Path | None:
    """The file of a sqlite:/// URL; None for another database or an in-memory one."""
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else ""
    return Path(path) if path and path != ":memory:" else None


def make_engine(url: str, busy_timeout_s: float = 30.0) -> Engine:
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if path is not None:
            private_file(path)
        # SQLite connections are only open files: keep them all rather than open and close the
        # overflow per request (opening one, with its pragmas, costs a tenth of a page under load).
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": busy_timeout_s},
            pool_size=POOL_SIZE + POOL_OVERFLOW,
            max_overflow=0,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            # WAL lets the grading threads write while pages read; foreign keys are off by default.
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)


def engine_for(settings: Settings) -> Engine:
    """The engine of these settings' database: the app makes one and disposes of it at shutdown,
    and so does each CLI command that needs one."""
    return make_engine(settings.database_url, settings.sqlite_busy_timeout_s)


def alembic_config(url: str) -> Config:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "app" / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def migrate(url: str | None = None) -> None:
    """Bring the database schema to the latest revision."""
    url = url or get_settings().database_url
    path = sqlite_path(url)
    if path is not None:
        private_file(path)
    command.upgrade(alembic_config(url), "head")
