"""Every knob of the app, with its default and the reason for it (pydantic-settings).

Values come from the environment (prefix KVPREP_, except DATABASE_URL and REDIS_URL)
or a `.env` file.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from graders.limits import Limits

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
    # How long a log-in lasts, checked on the server from the time of log-in (a copied cookie
    # included): two weeks, then the account's password again (OWASP's session guidance).
    login_max_age_s: int = 14 * 24 * 3600
    # Cookies need HTTPS (Secure) and responses send HSTS; None means "outside development",
    # so http://127.0.0.1 works in development and a production server never sends them in clear.
    secure_cookies: bool | None = None
    hsts: bool | None = None
    # Addresses of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed, as
    # uvicorn's forwarded_allow_ips ("10.0.0.5,10.0.0.6", or "*" behind a private network).
    # Empty: no proxy, every forwarded header is ignored (else anyone could pick their client
    # address and walk around the per-address rate limits).
    forwarded_allow_ips: str = ""
    # State-changing requests must come from a page of this site: an Origin equal to the Host
    # the request was sent to. A proxy that rewrites Host lists the public origins here
    # ("https://kvprep.example.com", comma-separated).
    trusted_origins: str = ""

    # Grading queue: empty means the embedded queue (SQLite file, worker threads in the app);
    # a redis:// URL lets separate `kvprep worker` machines share the work.
    redis_url: str = Field(default="", validation_alias=AliasChoices("REDIS_URL", "KVPREP_REDIS_URL"))
    # The queue's name: web servers and `kvprep worker` machines that share it share the work.
    queue_name: str = "kvprep"
    # The embedded queue's store when REDIS_URL is empty: a SQLite file, or "memory" (tests).
    embedded_queue: Literal["sqlite", "memory"] = "sqlite"
    # Left unset, it is named after the database it serves (see derived_path), so two servers on
    # two databases never share a queue: `<database>.grading-queue.sqlite3` beside a SQLite file.
    queue_file: Path = ROOT / "var" / "grading-queue.sqlite3"
    # Processes of this server (`kvprep serve --workers N` sets it). Rate limits are counted in
    # the database itself (or Redis), so every process, and a restarted one, sees the same counts.
    server_processes: int = 1
    # Grading threads in the app process (0 = none: `kvprep worker` processes do the grading).
    # Two match the 2 cores; the sandbox's children each run single-threaded torch.
    grading_workers: int = 2
    # How often an idle worker polls the embedded SQLite queue (seconds): a verdict's floor latency.
    queue_poll_s: float = 0.005
    # Grading leases (app/services/leases.py): a grader renews its claim every third of
    # `grading_lease_s`; a claim not renewed for that long counts as dead and is queued again.
    # Longer than a grading (10 s wall clock) so a slow grade never looks dead.
    grading_lease_s: float = 30.0
    # A queued submission nobody claimed in this long is queued again (its task was lost with a
    # killed worker, or with a web process between the commit and the enqueue). A backlog longer
    # than this only costs a duplicate task, which finds the submission claimed and does nothing.
    grading_queue_lease_s: float = 120.0
    # How often each grading process renews its leases and looks for expired ones.
    grading_reap_interval_s: float = 5.0
    # Claims before a submission whose graders keep dying gets an error verdict instead.
    grading_max_attempts: int = 3
    # How long a grader retries a database write that fails (locked SQLite, PostgreSQL away),
    # backing off up to 5 s between tries; after that the lease takes over.
    grading_db_retry_s: float = 120.0
    # SQLite's busy timeout: how long a statement waits for another writer's lock.
    sqlite_busy_timeout_s: float = 30.0
    # Largest request body of any kind; bigger ones get 413 before they are read whole.
    max_body_bytes: int = 1024 * 1024
    # Largest submission accepted, in bytes (CONTRACT.md: 413 above 64 KiB).
    max_code_bytes: int = 64 * 1024
    # Submissions per user per minute before 429 with Retry-After.
    submissions_per_minute: int = 30
    # The challenge page's Run: per client address per minute (a cookieless script is a new
    # visitor each time, so the per-visitor count alone bounds nothing), besides the per-visitor
    # count at submissions_per_minute.
    runs_per_address_per_minute: int = 20
    # Sandbox slots for Runs, apart from the grading_workers slots submissions use: Runs never
    # take a slot a submission needs. A Run that finds none free within run_slot_wait_s is
    # refused (429) rather than queued behind the others.
    run_slots: int = 1
    run_slot_wait_s: float = 5.0
    # The sandbox's limits for one submission (graders/limits.py documents how each is enforced):
    # wall clock and CPU seconds, memory, and how much it may print (CONTRACT.md defaults).
    grade_wall_seconds: float = 10.0
    grade_cpu_seconds: int = 10
    grade_memory_mib: int = 2048
    grade_output_kib: int = 1024

    # The lab (app/lab): each run is a niced child process on this many torch threads, stopped at
    # the time limit, one at a time per machine (an flock on the lock file, named after the
    # database when unset); a running job that has not reported for lab_stale_s is failed (its
    # child died). Runs wait in the database, not as processes: a child starts only when it runs.
    lab_threads: int = 1
    lab_time_limit_s: float = 600.0
    lab_nice: int = 10
    lab_lock_file: Path = ROOT / "var" / "lab.lock"
    lab_stale_s: float = 90.0
    # How often the lab's dispatcher looks for queued runs when nothing woke it (seconds).
    lab_poll_s: float = 2.0
    # Lab runs per signed-in user per hour (a full run keeps a core busy for a minute or two).
    lab_runs_per_hour: int = 10
    # Guests (no account) share a small budget per client address: runs per hour.
    lab_guest_runs_per_address_per_hour: int = 3
    # Lab runs queued or running at once: in all, and from one client address.
    lab_max_pending: int = 8
    lab_max_pending_per_address: int = 2
    # As root each sandboxed child runs under a uid of its own, taken from these: uids
    # sandbox_uid_base .. sandbox_uid_base + sandbox_uid_count - 1, none of them a real user's.
    # Every fork server (one per web or `kvprep worker` process, so one per `--workers`
    # process too) claims its own aligned block of 64 with a lock file in
    # /run/kvprep-sandbox-uids (graders/sandbox/uid_ranges.py), so servers on one machine
    # never share a uid (nor its RLIMIT_NPROC count): 1024 uids are 16 fork servers at once.
    sandbox_uid_base: int = Field(default=61440, ge=1000, le=2**31 - 2**20)
    sandbox_uid_count: int = Field(default=1024, ge=64, le=2**20)

    def grader_limits(self) -> Limits:
        """The sandbox limits these settings describe: one child per grading worker thread, plus
        the Runs' own slots (app/services/challenge_runs.py caps Runs at run_slots, so the
        grading threads always find theirs)."""
        return Limits(
            wall_seconds=self.grade_wall_seconds,
            cpu_seconds=self.grade_cpu_seconds,
            memory_bytes=self.grade_memory_mib * 2**20,
            output_bytes=self.grade_output_kib * 2**10,
            worker_slots=max(1, self.grading_workers) + max(1, self.run_slots),
        )

    # Accounts: log-in attempts per minute for one email from one client address (429 beyond);
    # one address trying many emails; and one email from everywhere, slower, so that an
    # attacker's guesses from elsewhere do not lock the owner out while a botnet is still bounded.
    login_attempts_per_minute: int = 10
    login_attempts_per_ip_per_minute: int = 30
    login_attempts_per_email_per_hour: int = 100
    # Sign-ups per hour per client address: each one costs an argon2 hash and a row.
    signups_per_hour: int = 20
    # New guest rows per hour per client address. A guest gets a row only when it stores something
    # (a submission, a quiz, a mock, a setting); a class behind one NAT address stays well inside this.
    guests_per_hour: int = 200
    # Guests that stored nothing are deleted after this many days (at start-up and `kvprep purge-guests`).
    guest_idle_days: int = 30
    # Personal API tokens an account may hold at once (one per machine or script is plenty; a
    # revoked one frees its place).
    api_tokens_per_account: int = 10
    # Shortest password accepted (NIST SP 800-63B asks for at least 8); longest, to bound hashing work.
    password_min_length: int = 8
    password_max_length: int = 256
    # argon2id cost (pwdlib/argon2-cffi defaults: RFC 9106's low-memory profile); tests turn it down.
    argon2_time_cost: int = 3
    argon2_memory_kib: int = 65536

    # FSRS: the probability of recall each review is scheduled for, unless a user sets their own.
    desired_retention: float = Field(default=0.9, ge=0.7, le=0.99)
    # Randomise intervals a little (FSRS fuzz) so cards learned together do not all come due together.
    fsrs_fuzzing: bool = True
    # New cards a day counted as due (like Anki's default); more when an interview date needs them.
    new_cards_per_day: int = 10
    # The largest quiz a user may start.
    quiz_max_size: int = 50

    # Mock interviews: the longest custom length (minutes); real interview loops rarely run past two hours.
    mock_max_minutes: int = 120
    # Planning figures for how many questions fit: an answer and its follow-up take about four minutes,
    # the coding problem about fifteen (at most half of a short mock).
    mock_minutes_per_question: float = 4.0
    mock_challenge_minutes: float = 15.0
    # The most card questions one mock asks, however long it is.
    mock_max_questions: int = 12
    # Longest typed answer kept (characters): a spoken answer is a few paragraphs.
    mock_answer_max_chars: int = 5000

    @model_validator(mode="after")
    def _refuse_default_secret(self) -> Settings:
        if self.environment != "development" and self.secret_key == DEV_SECRET:
            raise ValueError("KVPREP_SECRET_KEY must be set outside development")
        return self

    @model_validator(mode="after")
    def _name_files_after_the_database(self) -> Settings:
        # Files that serve one database are named by it unless set: two servers started from one
        # checkout on two databases would otherwise share a queue (and grade into the wrong one).
        if "queue_file" not in self.model_fields_set:
            self.queue_file = self.derived_path("grading-queue.sqlite3")
        if "lab_lock_file" not in self.model_fields_set:
            self.lab_lock_file = self.derived_path("lab.lock")
        return self

    def derived_path(self, suffix: str) -> Path:
        """A file that belongs to this database: beside a SQLite file (`<file>.<suffix>`), else in
        var/ under a digest of the database's URL (its password left out)."""
        url = self.database_url
        if url.startswith("sqlite:///") and url.removeprefix("sqlite:///") not in ("", ":memory:"):
            path = Path(url.removeprefix("sqlite:///"))
            return path.with_name(f"{path.name}.{suffix}")
        digest = hashlib.sha256(make_url(url).render_as_string(hide_password=True).encode()).hexdigest()
        return ROOT / "var" / f"db-{digest[:16]}.{suffix}"

    @property
    def production(self) -> bool:
        return self.environment != "development"

    @property
    def cookies_secure(self) -> bool:
        return self.production if self.secure_cookies is None else self.secure_cookies

    @property
    def send_hsts(self) -> bool:
        return self.production if self.hsts is None else self.hsts

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    return Settings()
