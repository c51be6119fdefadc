"""Long jobs that run in a child process of their own: the lab's runs and the personal FSRS fits.

Both take tens of seconds of torch, so they never run in a server process. The child runs in a
session of its own (a terminal's Ctrl-C is the server's to handle), yet ends with the server
that started it: `die_with_parent`, called first thing in the child, asks the kernel for a
SIGKILL when its parent goes (PR_SET_PDEATHSIG, prctl(2)), so even a server killed with
SIGKILL leaves no child behind; a clean shutdown kills the child's process group itself.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO

from huey.api import Huey

from app.config import ROOT

log = logging.getLogger("kvprep.jobs")
PARENT_ENV = "KVPREP_PARENT_PID"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def start_child(
    module_args: Sequence[str], *, database_url: str, threads: int, stderr: IO[bytes] | None = None
) -> subprocess.Popen[bytes]:
    """`python -m <module_args...>` from the repo root, on the app's database, with `threads`
    BLAS/OpenMP threads, in a process group of its own; never waits for it. `stderr`: a file
    for what it prints there (else nowhere), so a child that dies can say why."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        **{PARENT_ENV: str(os.getpid())},
    )
    return subprocess.Popen(
        [sys.executable, "-m", *module_args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr if stderr is not None else subprocess.DEVNULL,
        start_new_session=True,  # its own group: killed as one at shutdown, deaf to the terminal
    )


def die_with_parent() -> None:
    """In a child of start_child: be sent SIGKILL when the server that started it ends.

    Linux delivers it when the thread that forked the child exits: the lab's dispatcher and
    huey's worker threads live as long as the server. A parent already gone before the prctl
    (the child is then adopted by init) is caught by comparing getppid with the pid it passed.
    """
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit():
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
    if os.getppid() != int(parent):
        os._exit(1)


def kill_group(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (everything it started), then reap the child."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def child_task(
    huey: Huey, name: str, launch: Callable[[str], subprocess.Popen[bytes]], what: str
) -> Callable[[str], object]:
    """A queue task that starts `launch(job_id)`'s child, reaps it on a thread, and returns at once."""

    @huey.task(name=name)
    def _run(job_id: str) -> None:
        child = launch(job_id)
        threading.Thread(target=child.wait, name=f"{what}-{job_id}", daemon=True).start()
        log.info("%s %s started (pid %d)", what, job_id, child.pid)

    return _run  # type: ignore[no-any-return]
