"""Leases on submissions: exactly one verdict and one set of reviews, whatever process dies or stalls."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from datetime import timedelta
from typing import cast

import pytest
from sqlalchemy import Engine, func, update
from sqlmodel import Session, col, select

from app.config import ROOT, Settings
from app.db import make_engine
from app.models import Review, Submission, utcnow
from app.services.grading import grade_submission
from app.services.leases import LeaseKeeper, claim, queued_lease, reap, record_verdict
from tests.services.factories import catalog, fast_settings, make_user

SLUG = "kv-cache-bytes"
SOLUTION = (ROOT / "questions" / "challenges" / SLUG / "solution.py").read_text()
TOPICS = {c.slug: c.meta.topics for c in catalog().challenges}


def stored_submission(db: Session, settings: Settings) -> str:
    user = make_user(db)
    assert user.id is not None
    submission = Submission(
        id=f"s{time.monotonic_ns()}",
        user_id=user.id,
        challenge=SLUG,
        code=SOLUTION,
        lease_expires_at=queued_lease(settings.grading_queue_lease_s),
    )
    db.add(submission)
    db.commit()
    return submission.id


def reviews(db: Session) -> int:
    db.expire_all()
    return int(db.exec(select(func.count()).select_from(Review)).one())


def expire_lease(db: Session, submission_id: str) -> None:
    db.execute(
        update(Submission)
        .where(col(Submission.id) == submission_id)
        .values(lease_expires_at=utcnow() - timedelta(seconds=1))
    )
    db.commit()


@pytest.mark.sandbox
def test_a_submission_graded_twice_is_recorded_once(db: Session, settings: Settings) -> None:
    engine = cast(Engine, db.get_bind())
    submission_id = stored_submission(db, settings)
    stalled = claim(engine, submission_id, lease_s=30)  # grader A claims it, then stalls
    assert stalled is not None
    assert claim(engine, submission_id, lease_s=30) is None  # a duplicate task does nothing
    expire_lease(db, submission_id)
    assert reap(engine, queue_lease_s=60, max_attempts=3) == [submission_id]
    assert reap(engine, queue_lease_s=60, max_attempts=3) == []  # a second reaper finds nothing
    # Grader B grades it and records the verdict and the reviews.
    assert grade_submission(engine, submission_id, topics=TOPICS, settings=settings)
    once = reviews(db)
    assert once > 0
    # Grader A wakes up with its own verdict: refused, nothing recorded.
    with Session(engine) as session:
        late = {"challenge": SLUG, "verdict": "failed", "tests": [], "diagnosis": [], "duration_ms": 1}
        assert not record_verdict(session, submission_id, stalled, late)
        session.commit()
    # Another copy of the task, after the verdict: nothing either.
    assert not grade_submission(engine, submission_id, topics=TOPICS, settings=settings)
    db.expire_all()
    row = db.get(Submission, submission_id)
    assert row is not None and row.status == "done" and row.verdict == "passed" and row.attempts == 2
    assert row.lease_owner is None and reviews(db) == once


def test_reaper_requeues_lost_tasks_and_gives_up_on_a_submission_that_keeps_killing(
    db: Session, settings: Settings
) -> None:
    engine = cast(Engine, db.get_bind())
    lost_task = stored_submission(db, settings)  # queued, its task popped by a worker that died
    assert reap(engine, queue_lease_s=60, max_attempts=2) == []  # its queued lease still runs
    expire_lease(db, lost_task)
    assert reap(engine, queue_lease_s=60, max_attempts=2) == [lost_task]
    db.expire_all()
    row = db.get(Submission, lost_task)
    assert row is not None and row.status == "queued" and row.lease_expires_at is not None
    killer = stored_submission(db, settings)
    for _ in range(2):  # two graders claim it and die
        assert claim(engine, killer, lease_s=30) is not None
        expire_lease(db, killer)
        reap(engine, queue_lease_s=60, max_attempts=2)
    db.expire_all()
    row = db.get(Submission, killer)
    assert row is not None and row.status == "done" and row.verdict == "error"
    assert row.result is not None and row.result["challenge"] == SLUG
    assert "interrupted 2 times" in row.result["diagnosis"][0]


def test_a_keeper_renews_the_leases_of_its_gradings(db: Session, settings: Settings) -> None:
    engine = cast(Engine, db.get_bind())
    submission_id = stored_submission(db, settings)
    token = claim(engine, submission_id, lease_s=0.5)
    assert token is not None
    keeper = LeaseKeeper(
        engine, lease_s=30, queue_lease_s=60, interval_s=10, max_attempts=3, enqueue=lambda _: None
    )
    keeper.hold(token)
    time.sleep(0.6)  # the claim's own lease ran out; the keeper's round renews it before reaping
    keeper.tick()
    db.expire_all()
    row = db.get(Submission, submission_id)
    assert row is not None and row.status == "running" and row.lease_owner == token


class LockedDatabase:
    """Another process's write transaction on a SQLite file, held for `seconds` from `start()`."""

    def __init__(self, path: str, seconds: float) -> None:
        self.path, self.seconds = path, seconds
        self.held = threading.Event()
        self.thread = threading.Thread(target=self._hold)

    def _hold(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        self.held.set()
        time.sleep(self.seconds)
        conn.execute("ROLLBACK")
        conn.close()

    def start(self) -> None:
        self.thread.start()
        assert self.held.wait(10)


@pytest.mark.sandbox
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_verdict_waits_out_a_database_lock_longer_than_the_busy_timeout(
    db: Session, db_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The lock is taken while the submission is graded: storing its verdict retries, with backoff."""
    import graders.runner

    settings = fast_settings(db_url, sqlite_busy_timeout_s=0.1, grading_db_retry_s=30)
    engine = make_engine(db_url, settings.sqlite_busy_timeout_s)
    submission_id = stored_submission(db, settings)
    lock = LockedDatabase(db_url.removeprefix("sqlite:///"), seconds=1.5)
    real_grade = graders.runner.grade

    def grade_then_lock(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real_grade(*args, **kwargs)
        lock.start()
        return result

    monkeypatch.setattr(graders.runner, "grade", grade_then_lock)
    with caplog.at_level(logging.WARNING, logger="kvprep.grading"):
        assert grade_submission(engine, submission_id, topics=TOPICS, settings=settings)
    lock.thread.join()
    assert any("database is locked" in r.getMessage() for r in caplog.records)
    db.expire_all()
    row = db.get(Submission, submission_id)
    assert row is not None and row.status == "done" and row.verdict == "passed" and reviews(db) > 0
    engine.dispose()


@pytest.mark.sandbox
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_lock_outlasting_the_retries_is_recovered_by_the_lease_without_a_restart(
    db: Session, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graders.runner

    settings = fast_settings(db_url, sqlite_busy_timeout_s=0.1, grading_db_retry_s=0.5, grading_lease_s=1.0)
    engine = make_engine(db_url, settings.sqlite_busy_timeout_s)
    submission_id = stored_submission(db, settings)
    lock = LockedDatabase(db_url.removeprefix("sqlite:///"), seconds=2.0)
    real_grade = graders.runner.grade

    def grade_then_lock(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real_grade(*args, **kwargs)
        if not lock.held.is_set():
            lock.start()
        return result

    monkeypatch.setattr(graders.runner, "grade", grade_then_lock)
    assert not grade_submission(engine, submission_id, topics=TOPICS, settings=settings)  # gave up
    lock.thread.join()
    db.expire_all()
    row = db.get(Submission, submission_id)
    assert row is not None and row.status == "running"
    regraded: list[bool] = []
    keeper = LeaseKeeper(
        engine,
        lease_s=settings.grading_lease_s,
        queue_lease_s=60,
        interval_s=0.1,
        max_attempts=3,
        enqueue=lambda sid: regraded.append(grade_submission(engine, sid, topics=TOPICS, settings=settings)),
    )
    deadline = time.monotonic() + 10
    while not regraded and time.monotonic() < deadline:
        keeper.tick()  # the keeper's round, as its thread runs it
        time.sleep(0.1)
    assert regraded == [True]
    db.expire_all()
    row = db.get(Submission, submission_id)
    assert row is not None and row.status == "done" and row.verdict == "passed" and row.attempts == 2
    engine.dispose()
