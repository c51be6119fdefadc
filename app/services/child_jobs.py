"""Long jobs that run in a child process of their own, started from a queue task.

The lab's runs and the personal FSRS fits both take tens of seconds of torch: the queue's worker
only starts the child (detached, so a server restart does not kill it half-way) and returns; a
daemon thread reaps it when it exits, so no zombie is left and no worker is held.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

from huey.api import Huey

from app.config import ROOT

log = logging.getLogger("kvprep.jobs")


def start_child(module_args: Sequence[str], *, database_url: str, threads: int) -> subprocess.Popen[bytes]:
    """`python -m <module_args...>` from the repo root, detached, on the app's database, with
    `threads` BLAS/OpenMP threads; never waits for it."""
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return subprocess.Popen(
        [sys.executable, "-m", *module_args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a server restart does not kill a job half-way
    )


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
