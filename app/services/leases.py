"""Grading leases: every accepted submission gets exactly one verdict, whatever process dies.

The database is the truth about a submission, the queue only a hint of what to do next:

- `claim` moves a `queued` row to `running` with a fresh owner token and an expiry, in one
  conditional UPDATE: of two tasks for one submission (a duplicate, a redelivery) one wins.
- The grader renews its claims while it grades (`LeaseKeeper`, every third of the lease).
- `record_verdict` stores the verdict only while the row is still `running` under the same
  token, in the transaction that records the spaced-repetition reviews: a grader whose lease
  was taken over (it stalled, the database was locked) records nothing, so a submission graded
  twice is recorded once.
- `reap` (every grading process, every few seconds) queues again a `running` row whose lease
  ran out (its grader was killed) and a `queued` row nobody claimed in time (its task was lost
  with a killed worker, or with a web process between the commit and the enqueue). After
  `max_attempts` claims it stores an error verdict instead, so a submission that kills its
  graders cannot loop forever.

`with_db_retries` retries a write that fails because the database is locked or away, backing
off; when even that gives up, the lease (still in the database) brings the submission back.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from sqlalchemy import Engine, or_, update
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from app.enums import SubmissionStatus
from app.models import Submission, utcnow
from graders.verdict import Verdict

log = logging.getLogger("kvprep.grading")
T = TypeVar("T")

INTERRUPTED = (
    "Grading was interrupted {attempts} times (the grading process stopped each time); "
    "this submission was not graded. Submit it again, and if it happens again, tell us."
)


def with_db_retries(fn: Callable[[], T], *, what: str, budget_s: float) -> T:
    """fn(), again with exponential backoff (0.05 s doubling, at most 5 s) while the database
    is locked or unreachable (OperationalError), for up to budget_s; then the last error."""
    retrying = Retrying(
        retry=retry_if_exception_type(OperationalError),
        wait=wait_exponential(multiplier=0.05, max=5.0),
        stop=stop_after_delay(budget_s),
        reraise=True,
        before_sleep=lambda state: log.warning(
            "grading: %s failed (%s), try %d; retrying",
            what,
            state.outcome and state.outcome.exception(),
            state.attempt_number,
        ),
    )
    return retrying(fn)


def new_token() -> str:
    """A claim's owner token: this process's pid (in hex, to tell who holds it) and 96 random bits."""
    return f"{os.getpid():x}-{secrets.token_hex(12)}"


def queued_lease(queue_lease_s: float) -> Any:
    """The expiry a newly queued submission gets."""
    return utcnow() + timedelta(seconds=queue_lease_s)


def claim(engine: Engine, submission_id: str, lease_s: float) -> str | None:
    """Take a queued submission: its new owner token, or None when it is not (or no longer) queued."""
    token = new_token()
    with Session(engine) as session:
        claimed = session.execute(
            update(Submission)
            .where(col(Submission.id) == submission_id, col(Submission.status) == SubmissionStatus.QUEUED)
            .values(
                status=SubmissionStatus.RUNNING,
                lease_owner=token,
                lease_expires_at=utcnow() + timedelta(seconds=lease_s),
                attempts=col(Submission.attempts) + 1,
            )
        )
        session.commit()
    return token if claimed.rowcount == 1 else None  # type: ignore[attr-defined]


def record_verdict(session: Session, submission_id: str, token: str, result: dict[str, Any]) -> bool:
    """Store the verdict if `token` still holds the submission's lease; False (nothing stored) if not.

    Does not commit: the caller records the reviews in the same transaction and commits, so
    whoever sees `done` sees the reviews too, and a lost lease records neither.
    """
    stored = session.execute(
        update(Submission)
        .where(
            col(Submission.id) == submission_id,
            col(Submission.status) == SubmissionStatus.RUNNING,
            col(Submission.lease_owner) == token,
        )
        .values(
            status=SubmissionStatus.DONE,
            verdict=result["verdict"],
            result=result,
            finished_at=utcnow(),
            lease_owner=None,
            lease_expires_at=None,
        )
    )
    return stored.rowcount == 1  # type: ignore[attr-defined,no-any-return]


def renew(engine: Engine, tokens: list[str], lease_s: float) -> None:
    if not tokens:
        return
    with Session(engine) as session:
        session.execute(
            update(Submission)
            .where(
                col(Submission.lease_owner).in_(tokens), col(Submission.status) == SubmissionStatus.RUNNING
            )
            .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        )
        session.commit()


def reap(
    engine: Engine, *, queue_lease_s: float, max_attempts: int, everything_running: bool = False
) -> list[str]:
    """Queue again what lost its grader or its task; the ids to enqueue.

    Each row is taken back with a conditional UPDATE (its lease still the expired one), so two
    processes reaping at once queue a row once. `everything_running` also takes back running rows
    whose lease has not run out (the embedded queue's one consumer knows its predecessor is dead).
    """
    now = utcnow()
    # A row without a lease (left by an older version) counts as expired.
    expired = or_(col(Submission.lease_expires_at) < now, col(Submission.lease_expires_at).is_(None))
    running = col(Submission.status) == SubmissionStatus.RUNNING
    stale = or_(running, expired) if everything_running else expired
    with Session(engine) as session:
        rows = session.exec(
            select(Submission.id, Submission.status, Submission.challenge, Submission.attempts).where(
                col(Submission.status).in_(("queued", "running")), stale
            )
        ).all()
    requeue: list[str] = []
    for submission_id, status, challenge, attempts in rows:
        with Session(engine) as session:
            # Re-checked in the UPDATE itself: a renewal or another reaper since the SELECT wins.
            same = update(Submission).where(
                col(Submission.id) == submission_id, col(Submission.status) == status, stale
            )
            if status == SubmissionStatus.RUNNING and attempts >= max_attempts:
                result = {
                    "challenge": challenge,
                    "verdict": "error",
                    "tests": [],
                    "diagnosis": [INTERRUPTED.format(attempts=attempts)],
                    "duration_ms": 0,
                }
                taken = session.execute(
                    same.values(
                        status=SubmissionStatus.DONE,
                        verdict=Verdict.ERROR,
                        result=result,
                        finished_at=now,
                        lease_owner=None,
                        lease_expires_at=None,
                    )
                )
                if taken.rowcount == 1:  # type: ignore[attr-defined]
                    log.warning("grading: submission %s given up after %d attempts", submission_id, attempts)
            else:
                expires = queued_lease(queue_lease_s)
                taken = session.execute(
                    same.values(status=SubmissionStatus.QUEUED, lease_owner=None, lease_expires_at=expires)
                )
                if taken.rowcount == 1:  # type: ignore[attr-defined]
                    requeue.append(submission_id)
            session.commit()
    if requeue:
        log.warning("grading: queued again %d submission(s) whose grader or task was lost", len(requeue))
    return requeue


class LeaseKeeper:
    """A thread per grading process: renews the leases of the gradings running here, and reaps."""

    def __init__(
        self,
        engine: Engine,
        *,
        lease_s: float,
        queue_lease_s: float,
        interval_s: float,
        max_attempts: int,
        enqueue: Callable[[str], None],
    ) -> None:
        self.engine = engine
        self.lease_s, self.queue_lease_s = lease_s, queue_lease_s
        self.interval_s, self.max_attempts = interval_s, max_attempts
        self.enqueue = enqueue
        self._held: set[str] = set()
        self._held_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, token: str) -> None:
        with self._held_lock:
            self._held.add(token)

    def release(self, token: str) -> None:
        with self._held_lock:
            self._held.discard(token)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kvprep-lease-keeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def tick(self) -> None:
        """One round: renew, then reap. A locked or unreachable database only skips the round."""
        with self._held_lock:
            held = list(self._held)
        try:
            renew(self.engine, held, self.lease_s)
            for submission_id in reap(
                self.engine, queue_lease_s=self.queue_lease_s, max_attempts=self.max_attempts
            ):
                self.enqueue(submission_id)
        except OperationalError as exc:
            log.warning("grading: lease round skipped, the database did not answer: %s", exc)
        except Exception:  # the keeper must outlive any one bad round (a broker hiccup in enqueue)
            log.exception("grading: lease round failed")

    def _run(self) -> None:
        # Renewal comes at least three times per lease whatever the reap interval.
        period = min(self.interval_s, self.lease_s / 3)
        while not self._stop.wait(period):
            self.tick()
