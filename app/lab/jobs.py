"""Lab runs as background jobs: rows in the database, one child process at a time per machine.

The web request stores a LabRun row (refused past the caps below) and pokes the queue. The run
waits as that row, never as a process: a dispatcher thread of the process that consumes the
queue (the web server's, or each `kvprep worker`'s) takes the oldest queued run once it holds
this machine's lab lock, and only then starts `python -m app.lab.child` (niced, `lab_threads`
torch threads, stopped at `lab_time_limit_s`). When the child exits, a run it left unfinished
is failed with the reason (its exit status or signal); at start-up, runs a dead server left
`running` are failed too. The child ends with the server (app/services/child_jobs.py).

Caps, all settings: lab runs queued or running in all (`lab_max_pending`) and from one client
address (`lab_max_pending_per_address`); the hourly budgets of the route (app/routes/lab.py).
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import signal
import subprocess
import tempfile
import threading
from datetime import timedelta
from typing import IO

from huey.api import Huey
from sqlalchemy import Engine, func, text, update
from sqlmodel import Session, col, select

from app.config import Settings
from app.enums import LabRunStatus
from app.lab.experiments import EXPERIMENTS
from app.lab.runner import SIZES
from app.models import LabRun, utcnow
from app.services.child_jobs import kill_group, start_child
from app.services.errors import InvalidInput, TooManyRequests
from app.services.held_lock import HeldLock

log = logging.getLogger("kvprep.lab")
TASK_NAME = "kvprep.lab_run"
PENDING = (LabRunStatus.QUEUED, LabRunStatus.RUNNING)
# A run over the caps is told to come back in this many seconds (a tiny run takes about that).
CAP_RETRY_S = 30
# Beyond its own time limit (the child stops itself) the dispatcher kills a child after this.
KILL_GRACE_S = 60.0


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
    if run.status != LabRunStatus.RUNNING:
        return False
    last = run.heartbeat_at or run.created_at
    if last.tzinfo is None:
        last = last.replace(tzinfo=utcnow().tzinfo)
    return utcnow() - last > timedelta(seconds=settings.lab_stale_s)


def recent_runs(*, session: Session, user_id: int | None, limit: int) -> list[LabRun]:
    """The user's latest lab runs, newest first."""
    newest = col(LabRun.created_at).desc()
    return list(
        session.exec(select(LabRun).where(LabRun.user_id == user_id).order_by(newest).limit(limit)).all()
    )


def own_run(*, session: Session, user_id: int | None, run_id: str) -> LabRun | None:
    """The run when it is this user's; someone else's is indistinguishable from none."""
    run = session.get(LabRun, run_id[:32])
    return run if run is not None and run.user_id == user_id else None


SERVER_STOPPED = "the server stopped while this run was going; start it again"


def exit_reason(returncode: int, stderr_tail: str = "") -> str:
    """Why a child that left its run unfinished ended, in words a user can act on."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        why = f"the lab's process was killed by {name}"
        if -returncode == signal.SIGKILL:
            why += " (out of memory, past its time limit, or stopped by hand)"
    else:
        why = f"the lab's process exited with status {returncode} before finishing"
    last = stderr_tail.strip().splitlines()[-1:] if stderr_tail.strip() else []
    return (f"{why}: {last[0]}" if last else why)[:500]


def fail_run(engine: Engine, run_id: str, reason: str, *, only_status: tuple[str, ...] = PENDING) -> bool:
    """Mark a run failed with `reason`, if it is still in one of `only_status`; True if it was."""
    with Session(engine) as session:
        changed = session.execute(
            update(LabRun)
            .where(col(LabRun.id) == run_id, col(LabRun.status).in_(only_status))
            .values(status=LabRunStatus.FAILED, error=reason[:500], finished_at=utcnow(), message="failed")
        ).rowcount  # type: ignore[attr-defined]
        session.commit()
    return bool(changed)


def launch_child(run_id: str, settings: Settings, stderr: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """Start the child that runs one (already claimed) lab job; never waits for it."""
    args = [
        "app.lab.child", run_id, "--threads", str(settings.lab_threads),
        "--time-limit", str(settings.lab_time_limit_s), "--nice", str(settings.lab_nice),
    ]  # fmt: skip
    return start_child(args, database_url=settings.database_url, threads=settings.lab_threads, stderr=stderr)


def _admission_lock_id() -> int:
    return int.from_bytes(hashlib.sha256(b"kvprep-lab-admission").digest()[:8], "big", signed=True)


class LabJobs:
    """Create lab runs within the caps; on a consuming process, dispatch them one at a time."""

    def __init__(self, huey: Huey, engine: Engine, settings: Settings) -> None:
        self.engine, self.settings = engine, settings
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._child_run: str | None = None
        self._child_lock = threading.Lock()
        self.lock = HeldLock(settings.lab_lock_file)  # one lab child at a time per machine
        # Started: how many children this process launched (the flood test counts processes too).
        self.started = 0

        @huey.task(name=TASK_NAME)
        def _poke(run_id: str) -> None:
            """The queue's word that a run was stored: the dispatcher of this process looks now."""
            self._wake.set()

        self._task = _poke

    # -- the request side -------------------------------------------------------------------

    def submit(
        self, *, session: Session, user_id: int, size: str, experiments: list[str], address: str = ""
    ) -> LabRun:
        """Store a queued run. TooManyRequests when the runs queued or running, in all or from this
        address, are at their cap; LabRequestError for a bad size or experiment."""
        chosen = validate_request(size, experiments)
        if self.engine.dialect.name == "postgresql":
            # Admissions take turns (SQLite: the INSERT below already holds its one writer lock).
            session.execute(text("select pg_advisory_xact_lock(:id)"), {"id": _admission_lock_id()})
        run = LabRun(
            id=secrets.token_hex(12),
            user_id=user_id,
            size=size,
            experiments=chosen,
            client_address=address[:64],
        )
        session.add(run)
        session.flush()
        pending = select(func.count()).select_from(LabRun).where(col(LabRun.status).in_(PENDING))
        in_all = session.execute(pending).scalar_one()
        from_here = session.execute(
            pending.where(col(LabRun.client_address) == run.client_address)
        ).scalar_one()
        if in_all > self.settings.lab_max_pending or from_here > self.settings.lab_max_pending_per_address:
            session.rollback()
            who = (
                "from your address"
                if from_here > self.settings.lab_max_pending_per_address
                else "on this server"
            )
            raise TooManyRequests(
                f"Too many lab runs are waiting or running {who}: try again once one has finished",
                CAP_RETRY_S,
            )
        session.commit()
        session.refresh(run)
        try:
            self._task(run.id)
        except Exception:  # the row is stored: a dispatcher finds it on its next look anyway
            log.exception("lab: could not queue run %s; a dispatcher will find it", run.id)
        return run

    # -- the dispatcher (only in a process that consumes the queue) ---------------------------

    def start(self) -> None:
        """Fail what dead servers left running, then dispatch queued runs on a thread."""
        if self._thread is not None:
            return
        self._fail_dead_runs(at_start=True)
        self._stopping.clear()
        self._thread = threading.Thread(target=self._dispatch, name="kvprep-lab", daemon=True)
        self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Stop dispatching; kill a running child (its run fails, saying the server stopped)."""
        self._stopping.set()
        self._wake.set()
        with self._child_lock:
            child, run_id = self._child, self._child_run
        if child is not None and child.poll() is None:
            kill_group(child)
            if run_id is not None:
                fail_run(self.engine, run_id, SERVER_STOPPED)
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _fail_dead_runs(self, *, at_start: bool = False) -> None:
        """Runs whose child is gone: at the start of the embedded queue's one consumer, every
        `running` one (a consumer serves its database alone); otherwise those that stopped reporting."""
        every_running = at_start and not self.settings.redis_url
        with Session(self.engine) as session:
            running = session.exec(select(LabRun).where(col(LabRun.status) == LabRunStatus.RUNNING)).all()
            dead = [r.id for r in running if every_running or is_stale(r, self.settings)]
        for run_id in dead:
            if run_id == self._child_run:
                continue
            reason = (
                SERVER_STOPPED
                if every_running
                else "the lab job stopped reporting (its process died); start it again"
            )
            if fail_run(self.engine, run_id, reason, only_status=(LabRunStatus.RUNNING,)):
                log.warning("lab: run %s failed: %s", run_id, reason)

    def _claim_next(self) -> str | None:
        """Take the oldest queued run for this machine (atomically: one claimer wins)."""
        with Session(self.engine) as session:
            queued = session.exec(
                select(LabRun.id)
                .where(col(LabRun.status) == LabRunStatus.QUEUED)
                .order_by(col(LabRun.created_at))
                .limit(5)
            ).all()
            for run_id in queued:
                now = utcnow()
                claimed = session.execute(
                    update(LabRun)
                    .where(col(LabRun.id) == run_id, col(LabRun.status) == LabRunStatus.QUEUED)
                    .values(
                        status=LabRunStatus.RUNNING,
                        message="starting",
                        progress=0.0,
                        started_at=now,
                        heartbeat_at=now,
                    )
                ).rowcount  # type: ignore[attr-defined]
                session.commit()
                if claimed:
                    return run_id
        return None

    def _dispatch(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self.settings.lab_poll_s)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self._fail_dead_runs()
                if not self.lock.try_acquire():
                    continue  # another process of this machine runs a lab child
                try:
                    while not self._stopping.is_set() and self._run_one():
                        pass
                finally:
                    self.lock.release()
            except Exception:  # the database away for a while: try again on the next look
                log.exception("lab: the dispatcher failed; trying again")

    def _run_one(self) -> bool:
        """Run the next queued run to its end; False when none was queued."""
        run_id = self._claim_next()
        if run_id is None:
            return False
        stderr = tempfile.TemporaryFile()  # what the child prints there: the reason if it dies
        try:
            with self._child_lock:
                if self._stopping.is_set():
                    fail_run(
                        self.engine, run_id, "the server stopped before this run started; start it again"
                    )
                    return False
                child = launch_child(run_id, self.settings, stderr)
                self._child, self._child_run = child, run_id
                self.started += 1
            log.info("lab run %s started (pid %d)", run_id, child.pid)
            try:
                child.wait(timeout=self.settings.lab_time_limit_s + KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                kill_group(child)
            with self._child_lock:
                self._child, self._child_run = None, None
            if child.returncode != 0:
                stderr.seek(max(0, os.fstat(stderr.fileno()).st_size - 2000))
                tail = stderr.read().decode(errors="replace")
                # stop() kills the child and then fails its run; this thread may see the
                # death first, and the reason is the server stopping, not the signal.
                reason = SERVER_STOPPED if self._stopping.is_set() else exit_reason(child.returncode, tail)
                if fail_run(self.engine, run_id, reason):
                    log.warning("lab run %s: its child ended with %s", run_id, child.returncode)
        finally:
            stderr.close()
        # A child that exited cleanly but left its run unfinished fails it too.
        fail_run(
            self.engine,
            run_id,
            "the lab's process ended without a result",
            only_status=(LabRunStatus.RUNNING,),
        )
        return True
