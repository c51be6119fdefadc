"""Lab runs as background jobs: queued on the grading queue's huey, run in a child process.

The web request only stores a LabRun row and enqueues its id. The queue's worker (a thread
of the web server, or `kvprep worker` on another machine) starts `python -m app.lab.child`
and returns at once, so a lab run never holds a grading thread. The child is niced, runs
torch on `lab_threads` threads, stops at `lab_time_limit_s`, and takes a per-machine lock
file first: one lab run at a time per machine, the rest wait their turn in order.
"""

from __future__ import annotations

import logging
import secrets
import subprocess
from datetime import timedelta

from huey.api import Huey
from sqlalchemy import Engine
from sqlmodel import Session

from app.config import Settings
from app.lab.experiments import EXPERIMENTS
from app.lab.runner import SIZES
from app.models import LabRun, utcnow
from app.services.child_jobs import child_task, start_child
from app.services.errors import InvalidInput

log = logging.getLogger("kvprep.lab")
TASK_NAME = "kvprep.lab_run"


class LabRequestError(InvalidInput):
    """A lab request the user can fix (an unknown size or experiment): 422, naming the field."""


def validate_request(size: str, experiments: list[str]) -> list[str]:
    if size not in SIZES:
        raise LabRequestError(f"size must be one of {', '.join(SIZES)}, not {size!r}", field="size")
    unknown = [e for e in experiments if e not in EXPERIMENTS]
    if unknown:
        raise LabRequestError(f"unknown experiment(s): {', '.join(unknown)}", field="experiments")
    return [e for e in EXPERIMENTS if e in experiments] or list(EXPERIMENTS)


def is_stale(run: LabRun, settings: Settings) -> bool:
    """A running job that stopped reporting: its child died (killed, or the machine restarted)."""
    if run.status != "running":
        return False
    last = run.heartbeat_at or run.created_at
    if last.tzinfo is None:
        last = last.replace(tzinfo=utcnow().tzinfo)
    return utcnow() - last > timedelta(seconds=settings.lab_stale_s)


def launch_child(run_id: str, settings: Settings) -> subprocess.Popen[bytes]:
    """Start the child that runs one lab job; never waits for it."""
    lock = settings.lab_lock_file
    lock.parent.mkdir(parents=True, exist_ok=True)
    args = [
        "app.lab.child", run_id, "--lock", str(lock), "--threads", str(settings.lab_threads),
        "--time-limit", str(settings.lab_time_limit_s), "--nice", str(settings.lab_nice),
    ]  # fmt: skip
    return start_child(args, database_url=settings.database_url, threads=settings.lab_threads)


class LabJobs:
    """Create lab runs and hand them to the queue; the queue's worker launches their children."""

    def __init__(self, huey: Huey, engine: Engine, settings: Settings) -> None:
        self.engine, self.settings = engine, settings

        self._task = child_task(huey, TASK_NAME, lambda run_id: launch_child(run_id, settings), "lab run")

    def submit(self, *, session: Session, user_id: int, size: str, experiments: list[str]) -> LabRun:
        chosen = validate_request(size, experiments)
        run = LabRun(id=secrets.token_hex(12), user_id=user_id, size=size, experiments=chosen)
        session.add(run)
        session.commit()
        session.refresh(run)
        self._task(run.id)
        return run
