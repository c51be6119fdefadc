"""What the processes of `kvprep serve --workers N` share on one machine: rate limits, the queue."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from app.db import make_engine
from app.services.embedded_queue import (
    ConsumerLock,
    QueueOfAnotherDatabase,
    check_queue_owner,
    make_embedded_huey,
)
from app.services.ratelimit import RateLimiter
from app.services.ratelimit_db import DatabaseStorage


def test_limiters_on_one_database_count_together_and_outlive_a_restart(db_url: str) -> None:
    engines = [make_engine(db_url), make_engine(db_url)]  # two processes' engines on one database
    first, second = (RateLimiter("3/minute", DatabaseStorage(e)) for e in engines)
    assert [first.hit("user:1"), second.hit("user:1"), first.hit("user:1")] == [0, 0, 0]
    wait = second.hit("user:1")
    assert 0 < wait <= 60
    assert first.hit("user:2") == 0  # keys are separate
    engines[0].dispose()
    engines.append(make_engine(db_url))
    restarted = RateLimiter("3/minute", DatabaseStorage(engines[-1]))  # a restarted process
    assert restarted.hit("user:1") > 0
    for engine in engines:
        engine.dispose()
    assert RateLimiter("3/minute", "memory://").hit("user:1") == 0  # memory counts alone


def test_the_queue_refuses_a_server_of_another_database(tmp_path: Path) -> None:
    queue = tmp_path / "queue.sqlite3"
    holder = check_queue_owner(queue, "sqlite:////srv/a.sqlite3")
    assert holder is not None
    assert check_queue_owner(queue, "sqlite:////srv/a.sqlite3") is None  # same database: it enqueues
    with pytest.raises(QueueOfAnotherDatabase, match="another database"):
        check_queue_owner(queue, "sqlite:////srv/b.sqlite3")
    holder.release()
    assert check_queue_owner(queue, "sqlite:////srv/b.sqlite3") is not None  # free again: it consumes


def test_only_one_process_consumes_the_embedded_queue(tmp_path: Path) -> None:
    queue = tmp_path / "queue.sqlite3"
    holder, other = ConsumerLock(queue), ConsumerLock(queue)
    assert holder.try_acquire() and not other.try_acquire()
    holder.release()
    assert other.try_acquire()  # the next process takes over once the holder is gone
    other.release()


def test_an_idle_consumer_wakes_when_a_task_is_stored(tmp_path: Path) -> None:
    queue = tmp_path / "queue.sqlite3"
    consumer, producer = make_embedded_huey("t", queue), make_embedded_huey("t", queue)  # two processes
    consumer.storage.idle_wait_s = 20.0  # far longer than the test may take: only the wake-up ends the wait
    got: list[bytes | None] = []
    listening = threading.Event()

    def consume() -> None:
        consumer.storage._listen()
        listening.set()
        got.append(consumer.storage.dequeue())

    thread = threading.Thread(target=consume)
    thread.start()
    listening.wait(5)
    time.sleep(0.05)  # let dequeue block
    start = time.monotonic()
    producer.storage.enqueue(b"task")
    thread.join(10)
    assert got == [b"task"] and time.monotonic() - start < 10
    consumer.storage.close_sockets()
    producer.storage.close_sockets()
