"""The grading queue: submissions are stored, queued with huey, and graded by worker threads.

Embedded default: huey's SQLite store and worker threads inside the app process, no
server to run. With REDIS_URL set, the same task goes through Redis and any number
of `kvprep worker` machines share the work. The web request never waits for a verdict.
Whatever process dies, every stored submission gets exactly one verdict: the claim, the
verdict and the re-queueing of lost work go through leases in the database (leases.py).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from huey import MemoryHuey, RedisHuey
from huey.api import Huey
from huey.consumer import Consumer
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from app.config import Settings
from app.enums import SubmissionStatus
from app.models import Submission
from app.services.embedded_queue import (
    ConsumerLock,
    WakeableSqliteStorage,
    check_queue_owner,
    database_identity,
    make_embedded_huey,
)
from app.services.leases import LeaseKeeper, claim, queued_lease, reap, record_verdict, with_db_retries
from app.services.mistake_hints import with_mistake_hints
from app.services.scheduling import record_challenge_result
from graders.limits import Limits
from graders.verdict import Verdict

log = logging.getLogger("kvprep.grading")
TASK_NAME = "kvprep.grade_submission"


def make_huey(settings: Settings) -> Huey:
    if settings.redis_url:
        # BRPOP: an idle worker wakes the moment a task arrives, on any machine.
        return RedisHuey(settings.queue_name, url=settings.redis_url, blocking=True, read_timeout=1)
    if settings.embedded_queue == "memory":
        return MemoryHuey(settings.queue_name)
    return make_embedded_huey(settings.queue_name, settings.queue_file)


def grade_submission(
    engine: Engine,
    submission_id: str,
    settings: Settings,
    limits: Limits | None = None,
    topics: Mapping[str, Sequence[str]] | None = None,
    on_done: Callable[[str, dict[str, Any]], None] | None = None,
    keeper: LeaseKeeper | None = None,
    mistake_hints: Mapping[str, Mapping[str, str]] | None = None,
) -> bool:
    """Grade one stored submission and store its verdict; True if this call stored it.

    Never raises for a bad submission. The claim and the verdict go through the lease
    (app/services/leases.py): a task for a submission already claimed or done does nothing, and
    a grader that lost its lease meanwhile stores nothing. The verdict also counts for spaced
    repetition: a pass is a Good review of the challenge's concept cards (`topics[slug]`), any
    other verdict brings them forward. `on_done(id, json)` runs once the verdict is committed,
    with the submission's JSON (it wakes the requests waiting). `keeper` renews the lease while
    the grading runs. `mistake_hints[slug]`: the hint per named mistake (challenge.yaml), added to a
    failed verdict for the mistakes its diagnosis names (app/services/mistake_hints.py).
    """
    from graders.runner import grade

    budget = settings.grading_db_retry_s
    try:
        token = with_db_retries(
            lambda: claim(engine, submission_id, settings.grading_lease_s), what="claim", budget_s=budget
        )
    except OperationalError:
        # Still queued, its lease running: the reaper queues it again when that runs out.
        log.exception("grading: could not claim submission %s; the reaper will queue it again", submission_id)
        return False
    if token is None:  # already claimed by another grader, or done
        return False
    if keeper is not None:
        keeper.hold(token)
    try:
        with Session(engine) as session:
            submission = session.get(Submission, submission_id)
            if submission is None:
                return False
            slug, code, user_id = submission.challenge, submission.code, submission.user_id
        graded = True
        try:
            result = grade(slug, code, limits).to_json()
            result = with_mistake_hints(result, (mistake_hints or {}).get(slug, {}))
        except Exception:  # the grader's own failure must not leave the submission running forever
            graded = False
            log.exception("grader failed on submission %s", submission_id)
            result = {
                "challenge": slug,
                "verdict": "error",
                "tests": [],
                "diagnosis": ["The grader itself failed on this submission; it has been logged."],
                "duration_ms": 0,
            }

        def store() -> bool:
            with Session(engine) as session:
                if not record_verdict(session, submission_id, token, result):
                    session.rollback()
                    return False
                if graded and topics is not None:
                    # In the same transaction as the verdict: whoever sees "done" sees the reviews
                    # too, and a grader that lost its lease records neither.
                    record_challenge_result(
                        session=session,
                        user_id=user_id,
                        slug=slug,
                        passed=result["verdict"] == Verdict.PASSED,
                        topics=topics.get(slug, ()),
                        settings=settings,
                    )
                session.commit()
                return True

        try:
            stored = with_db_retries(store, what="storing the verdict", budget_s=budget)
        except OperationalError:
            log.exception("grading: verdict of %s not stored; its lease will bring it back", submission_id)
            return False
    finally:
        if keeper is not None:
            keeper.release(token)
    if not stored:
        log.warning("grading: submission %s was taken over by another grader; verdict dropped", submission_id)
        return False
    if on_done is not None:
        on_done(submission_id, {**result, "id": submission_id, "status": "done"})
    return True


def log_isolation(limits: Limits, *, uid_base: int | None = None, uid_count: int | None = None) -> None:
    """Start the sandbox's fork server now and say which isolation layers are active, and why not."""
    from graders.runner import warm_up

    layers = warm_up(limits, uid_base=uid_base, uid_count=uid_count)
    for layer, info in layers.items():
        # A user namespace only stands in for the uid drop: with the uid layer on, it is not needed.
        not_needed = layer == "userns" and layers.get("uid", {}).get("active")
        state = "active" if info.get("active") else ("not needed" if not_needed else "INACTIVE")
        (log.info if info.get("active") or not_needed else log.warning)(
            "sandbox layer %-10s %s: %s", layer, state, info.get("detail", "")
        )


class _EmbeddedConsumer(Consumer):  # type: ignore[misc]
    """A huey consumer living inside the web process: the server owns the signals, not huey."""

    def _set_signal_handlers(self) -> None:
        pass


class Companion(Protocol):
    """Work that runs beside the queue's consumer (the lab's dispatcher)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...


@dataclass
class GradingQueue:
    huey: Huey
    engine: Engine
    settings: Settings
    # slug -> the topics of its concept cards (challenge.yaml), for spaced repetition
    topics: Mapping[str, Sequence[str]]
    consumer: Consumer | None = None
    # slug -> {mistake id: hint} (challenge.yaml's mistake_hints), for a failed verdict's first hint
    mistake_hints: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Called with a submission's id once its verdict is stored (in the grading thread).
    on_done: Callable[[str, dict[str, Any]], None] | None = None

    def __post_init__(self) -> None:
        engine, settings, topics = self.engine, self.settings, self.topics
        limits = settings.grader_limits()

        self.keeper = LeaseKeeper(
            engine,
            lease_s=settings.grading_lease_s,
            queue_lease_s=settings.grading_queue_lease_s,
            interval_s=settings.grading_reap_interval_s,
            max_attempts=settings.grading_max_attempts,
            enqueue=self._enqueue,
        )

        @self.huey.task(name=TASK_NAME)
        def _grade(submission_id: str) -> None:
            grade_submission(
                engine, submission_id, settings, limits, topics, self._notify, self.keeper, self.mistake_hints
            )

        self._task = _grade
        # Started with the consumer and stopped with it: the lab's dispatcher runs where the queue
        # is consumed (app/lab/jobs.py), so a process that only enqueues starts no lab child.
        self.companions: list[Companion] = []
        self._lock: ConsumerLock | None = None
        self._takeover: threading.Thread | None = None
        self._stopping = threading.Event()

    def _notify(self, submission_id: str, payload: dict[str, Any]) -> None:
        if self.on_done is not None:
            self.on_done(submission_id, payload)

    def submit(self, *, session: Session, user_id: int, challenge: str, code: str) -> Submission:
        submission = Submission(
            id=secrets.token_hex(12),
            user_id=user_id,
            challenge=challenge,
            code=code,
            status=SubmissionStatus.QUEUED,
            lease_expires_at=queued_lease(self.settings.grading_queue_lease_s),
        )
        session.add(submission)
        session.commit()
        session.refresh(submission)
        self._enqueue(submission.id)
        return submission

    def _enqueue(self, submission_id: str) -> None:
        """Queue a stored submission. A broker that does not answer loses nothing: the row is
        stored with its queued lease, and a reaper queues it again when that runs out."""
        try:
            self._task(submission_id)
        except Exception:
            log.exception("grading: could not queue submission %s; the reaper will", submission_id)

    def start_workers(self, workers: int) -> None:
        """Worker threads in this process.

        Embedded SQLite queue: only the one process holding the queue's lock grades (the others
        of a multi-process server enqueue, and take over if that process goes); it queues again
        the submissions a previous run left unfinished.
        """
        if isinstance(self.huey.storage, WakeableSqliteStorage):
            # Raises QueueOfAnotherDatabase (the server refuses to start) when the queue's
            # consumer serves another database.
            lock = check_queue_owner(self.settings.queue_file, self.settings.database_url)
            self._lock = lock or ConsumerLock(self.settings.queue_file)
            if lock is None:
                log.warning(
                    "grading: another process serving this database consumes the queue %s; this one "
                    "enqueues, and takes over the grading if that process stops",
                    self.settings.queue_file,
                )
                self._takeover = threading.Thread(
                    target=self._take_over_when_free,
                    args=(workers,),
                    name="kvprep-queue-takeover",
                    daemon=True,
                )
                self._takeover.start()
                return
        self._start_consumer(workers)

    def _take_over_when_free(self, workers: int) -> None:
        assert self._lock is not None
        while not self._stopping.wait(2.0):
            if self._lock.try_acquire(database_identity(self.settings.database_url)):
                log.info("grading: the queue's consumer went away; this process grades now")
                self._start_consumer(workers)
                return

    def _start_consumer(self, workers: int) -> None:
        log_isolation(
            self.settings.grader_limits(),
            uid_base=self.settings.sandbox_uid_base,
            uid_count=self.settings.sandbox_uid_count,
        )
        if not self.settings.redis_url:
            self._requeue_unfinished()
        poll = self.settings.queue_poll_s
        self.consumer = _EmbeddedConsumer(
            self.huey,
            workers=workers,
            periodic=False,
            initial_delay=poll,
            backoff=1.0,
            max_delay=poll,
            check_worker_health=False,
        )
        self.consumer.start()
        self.keeper.start()
        for companion in self.companions:
            companion.start()
        log.info("grading: %d worker thread(s) on the %s queue", workers, type(self.huey).__name__)

    def _requeue_unfinished(self) -> None:
        """Queue again what a previous consumer left: `running` ones died with it (one consumer)."""
        self.huey.flush()
        reap(
            self.engine,
            queue_lease_s=self.settings.grading_queue_lease_s,
            max_attempts=self.settings.grading_max_attempts,
            everything_running=True,
        )
        with Session(self.engine) as session:
            pending = session.exec(
                select(Submission.id).where(col(Submission.status) == SubmissionStatus.QUEUED)
            ).all()
        for submission_id in pending:
            self._enqueue(submission_id)

    def run_worker(self, workers: int) -> None:
        """A standalone worker process (`kvprep worker`): huey's consumer with its signal handling."""
        log_isolation(
            self.settings.grader_limits(),
            uid_base=self.settings.sandbox_uid_base,
            uid_count=self.settings.sandbox_uid_count,
        )
        self.keeper.start()
        for companion in self.companions:
            companion.start()
        try:
            Consumer(self.huey, workers=workers, periodic=False, check_worker_health=True).run()
        finally:
            for companion in self.companions:
                companion.stop()
            from graders.runner import shutdown as stop_sandbox

            stop_sandbox()  # its temporary folders go with it, whatever signal ended the consumer

    def stop(self) -> None:
        self._stopping.set()
        for companion in self.companions:
            companion.stop()
        self.keeper.stop()
        if self.consumer is not None:
            self.consumer.stop(graceful=True)
            self.consumer = None
        if isinstance(self.huey.storage, WakeableSqliteStorage):
            self.huey.storage.close_sockets()
        if self._lock is not None:
            self._lock.release()


def build_queue(
    settings: Settings,
    engine: Engine,
    topics: Mapping[str, Sequence[str]],
    mistake_hints: Mapping[str, Mapping[str, str]] | None = None,
) -> GradingQueue:
    # The checks run torch in this process beside the sandbox's children on few cores:
    # one thread each, set before torch's first op (two 2-thread torch processes collapse).
    import torch

    torch.set_num_threads(1)
    return GradingQueue(make_huey(settings), engine, settings, topics, mistake_hints=mistake_hints or {})
