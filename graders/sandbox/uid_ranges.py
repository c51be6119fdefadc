"""Each fork server's own block of sandbox uids, claimed with a lock file nobody else can hold.

As root, every child runs under a uid of its own (graders/sandbox/isolation.py), and
RLIMIT_NPROC counts every process of that uid on the machine. Two fork servers handing out
the same uids (two `kvprep serve` on one machine, the processes of `--workers N`, a test
run beside a dev server) would share those counts and see each other's children as their
own uid. So the sandbox's uids, `[uid_base, uid_base + uid_count)` (app/config.py:
sandbox_uid_base, sandbox_uid_count), are cut into blocks of UIDS_PER_SERVER, aligned to
multiples of it, and each fork server takes the first free block at start-up: it holds an
exclusive flock(2) on `LOCK_DIR/uids-<first uid>.lock` for as long as it lives. The kernel
drops the lock when the process dies, however it dies, so a crashed server's block is free
again and nothing has to be cleaned up; and since the blocks are aligned, servers configured
with different (overlapping) bases still never hand out the same uid.
"""

from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass

UIDS_PER_SERVER = 64  # children one fork server may run at once (running ones and spares)
LOCK_DIR = "/run/kvprep-sandbox-uids"


class NoFreeUidRange(RuntimeError):
    """Every block of the configured uids is held by another live fork server."""


@dataclass
class UidRange:
    first: int
    size: int
    lock_path: str
    lock_fd: int  # keep open: closing it (or exiting) gives the block back

    def release(self) -> None:
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1


def blocks(uid_base: int, uid_count: int, size: int = UIDS_PER_SERVER) -> list[int]:
    """First uids of the aligned blocks lying wholly inside [uid_base, uid_base + uid_count)."""
    first = -(-uid_base // size) * size  # round up to a multiple of size
    return list(range(first, uid_base + uid_count - size + 1, size))


def _lock_dir(path: str) -> None:
    """Create the lock folder, or check that nobody but us could have planted files in it."""
    os.makedirs(path, mode=0o755, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise NoFreeUidRange(
            f"{path} must be a folder owned by uid {os.geteuid()} that only it may write to "
            f"(it holds the sandbox's uid claims)"
        )


def claim(uid_base: int, uid_count: int, lock_dir: str = LOCK_DIR, size: int = UIDS_PER_SERVER) -> UidRange:
    """Take the first free block; NoFreeUidRange (saying what to change) when none is free."""
    candidates = blocks(uid_base, uid_count, size)
    if not candidates:
        raise NoFreeUidRange(
            f"sandbox uids {uid_base}..{uid_base + uid_count - 1} hold no aligned block of {size}: "
            f"raise sandbox_uid_count (KVPREP_SANDBOX_UID_COUNT) to at least {2 * size}"
        )
    _lock_dir(lock_dir)
    for first in candidates:
        path = os.path.join(lock_dir, f"uids-{first}.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())  # who holds it, for whoever looks
        return UidRange(first, size, path, fd)
    raise NoFreeUidRange(
        f"all {len(candidates)} blocks of {size} sandbox uids from {uid_base} are held by other "
        f"running fork servers (see {lock_dir}): raise sandbox_uid_count or use another sandbox_uid_base"
    )
