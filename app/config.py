"""Every knob of the app, with its default and the reason for it (pydantic-settings).

Values come from the environment (prefix KVPREP_, except DATABASE_URL and REDIS_URL)
or a `.env` file.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent
DEV_SECRET = "dev-only-secret-change-me"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KVPREP_", env_file=".env", extra="ignore")

    # "development" allows the built-in secret; anything else demands a real one.
    environment: str = "development"
    # Signs session cookies; must be set (and secret) outside development.
    secret_key: str = DEV_SECRET
    # SQLite file by default so the app runs with no server; PostgreSQL when DATABASE_URL says so.
    database_url: str = Field(
        default=f"sqlite:///{ROOT / 'var' / 'kvprep.sqlite3'}",
        validation_alias=AliasChoices("DATABASE_URL", "KVPREP_DATABASE_URL"),
    )
    # Where the question bank and challenges live (the repo's questions/ folder).
    content_root: Path = ROOT / "questions"
    # Sync the bank into the database at start-up; a broken bank stops the server.
    sync_content_on_start: bool = True
    # Cards per page in lists and in the API, and the most a client may ask for.
    page_size: int = 20
    max_page_size: int = 100
    # Session cookie lifetime: guests keep their progress for a year of inactivity.
    session_max_age_s: int = 365 * 24 * 3600
    # Cookies need HTTPS when true; off in development so http://127.0.0.1 works.
    secure_cookies: bool = False

    # Grading queue: empty means the embedded queue (SQLite file, worker threads in the app);
    # a redis:// URL lets separate `kvprep worker` machines share the work.
    redis_url: str = Field(default="", validation_alias=AliasChoices("REDIS_URL", "KVPREP_REDIS_URL"))
    # The embedded queue's store when REDIS_URL is empty: a SQLite file, or "memory" (tests).
    embedded_queue: Literal["sqlite", "memory"] = "sqlite"
    queue_file: Path = ROOT / "var" / "grading-queue.sqlite3"
    # Grading threads in the app process (0 = none: `kvprep worker` processes do the grading).
    # Two match the 2 cores; the sandbox's children each run single-threaded torch.
    grading_workers: int = 2
    # How often an idle worker polls the embedded SQLite queue (seconds): a verdict's floor latency.
    queue_poll_s: float = 0.005
    # Largest request body of any kind; bigger ones get 413 before they are read whole.
    max_body_bytes: int = 1024 * 1024
    # Largest submission accepted, in bytes (CONTRACT.md: 413 above 64 KiB).
    max_code_bytes: int = 64 * 1024
    # Submissions per user per minute before 429 with Retry-After.
    submissions_per_minute: int = 30

    @model_validator(mode="after")
    def _refuse_default_secret(self) -> Settings:
        if self.environment != "development" and self.secret_key == DEV_SECRET:
            raise ValueError("KVPREP_SECRET_KEY must be set outside development")
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    return Settings()
