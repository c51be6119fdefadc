"""The embedded grading queue: huey's SQLite store, woken on enqueue instead of polled.

Polling every few milliseconds cost every page: each poll took the GIL from the event loop,
and on a busy machine a thread that is handed the GIL but not a CPU stalls the loop with it.
Here an idle worker blocks on a Unix datagram socket (its name derived from the queue file,
so every process of one server finds it), and `enqueue` sends one byte to it after the task
is stored. A lost or early byte costs at most `idle_wait_s`: the store is checked then anyway.

Commits are not fsync'd one by one (WAL with `synchronous=NORMAL`, as the app's own database):
huey's default, a full fsync per enqueue and per dequeue, put two disk flushes between a
submission and its grading. The queue is only a hint (app/services/leases.py): a task lost to
a power cut is queued again by the reaper from the submission's stored row.

One consumer per queue file: the process that holds an exclusive `flock` on
`<queue file>.lock` grades, the other processes of a multi-process server only enqueue (and
try for the lock now and then, so a restarted server process takes over).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from huey import SqliteHuey
from huey.storage import SqliteStorage

from app.services.held_lock import HeldLock


def wake_address(queue_file: Path) -> str:
    """A short socket path for a queue file (Unix socket paths stop at 107 bytes)."""
    digest = hashlib.sha256(str(queue_file.resolve()).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"kvprep-queue-{digest}.wake")


class WakeableSqliteStorage(SqliteStorage):  # type: ignore[misc]
    def __init__(self, *args: Any, wake_path: str, idle_wait_s: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wake_path = wake_path
        self.idle_wait_s = idle_wait_s
        self._listener: socket.socket | None = None
        self._listener_lock = threading.Lock()
        self._sender: socket.socket | None = None

    def _create_connection(self) -> Any:
        conn = super()._create_connection()
        conn.execute("pragma synchronous=NORMAL")  # see the module docstring
        return conn

    def enqueue(self, data: bytes, priority: int | None = None) -> None:
        super().enqueue(data, priority)
        with self._listener_lock:
            if self._sender is None:
                self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sender.setblocking(False)
            sender = self._sender
        with contextlib.suppress(OSError):  # no consumer listening (yet), or its buffer is full
            sender.sendto(b"!", self.wake_path)

    def _listen(self) -> socket.socket:
        with self._listener_lock:
            if self._listener is None:
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.wake_path)  # a dead consumer's; only the lock holder listens
                listener.bind(self.wake_path)
                listener.setblocking(False)
                self._listener = listener
            return self._listener

    def dequeue(self) -> bytes | None:
        data = super().dequeue()
        if data is not None:
            return data
        listener = self._listen()
        readable, _, _ = select.select([listener], [], [], self.idle_wait_s)
        if readable:
            with contextlib.suppress(BlockingIOError):
                while listener.recv(64):
                    pass
        return super().dequeue()  # type: ignore[no-any-return]

    def close_sockets(self) -> None:
        """Close the wake-up sockets (and remove the listening one's name, if this process had it)."""
        with self._listener_lock:
            if self._sender is not None:
                self._sender.close()
                self._sender = None
            if self._listener is not None:
                self._listener.close()
                self._listener = None
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.wake_path)


class WakeableSqliteHuey(SqliteHuey):  # type: ignore[misc]
    storage_class = WakeableSqliteStorage


def make_embedded_huey(name: str, queue_file: Path) -> WakeableSqliteHuey:
    from app.db import private_file

    private_file(queue_file)  # the queue holds submissions' ids: its owner's alone
    return WakeableSqliteHuey(name, filename=str(queue_file), wake_path=wake_address(queue_file))


class ConsumerLock(HeldLock):
    """An exclusive lock on `<queue file>.lock`: held by the one process that grades.

    The holder writes which database it serves into the lock file, so that a server of another
    database that finds the queue taken can say so and refuse, instead of enqueueing work the
    holder would look for in its own database and never find.
    """

    def __init__(self, queue_file: Path) -> None:
        super().__init__(queue_file.with_name(queue_file.name + ".lock"))

    def try_acquire(self, serves: str = "") -> bool:
        if self._fd is not None:
            return True
        if not super().try_acquire():
            return False
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, serves.encode(), 0)
        return True

    def holder_serves(self) -> str:
        """The database the lock's holder said it serves ("" if none said)."""
        try:
            return self.path.read_text(errors="replace").strip()
        except FileNotFoundError:
            return ""


def database_identity(database_url: str) -> str:
    """How a queue's lock names the database its consumer serves (the URL, password hidden)."""
    from sqlalchemy.engine import make_url

    return make_url(database_url).render_as_string(hide_password=True)


class QueueOfAnotherDatabase(RuntimeError):
    """The embedded queue file is consumed by a server of another database: this one refuses."""


def check_queue_owner(queue_file: Path, database_url: str) -> ConsumerLock | None:
    """Take the queue's consumer lock for this database: the lock, or None when another process
    serving the same database holds it. Raises QueueOfAnotherDatabase, naming both, when the
    holder serves another database (two servers must never share one queue file)."""
    lock = ConsumerLock(queue_file)
    mine = database_identity(database_url)
    if lock.try_acquire(mine):
        return lock
    theirs = lock.holder_serves()
    if theirs and theirs != mine:
        raise QueueOfAnotherDatabase(
            f"the grading queue {queue_file} is consumed by a running server of another database "
            f"({theirs}); this server ({mine}) would never see its submissions graded. Leave "
            "KVPREP_QUEUE_FILE unset (each database then gets its own queue) or give it a file of its own."
        )
    return None
