"""An exclusive flock(2) on a file, held for as long as this process keeps it.

The kernel drops the lock when the process dies, however it dies, so a crashed holder leaves
nothing to clean up. Used for the grading queue's consumer lock and the machine's lab lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path


class HeldLock:
    """`try_acquire()` takes the lock without waiting (False when another process holds it);
    `release()` gives it back. Acquiring a lock already held here is a no-op that answers True."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
