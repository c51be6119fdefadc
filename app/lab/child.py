"""`python -m app.lab.child RUN_ID`: run one stored lab job and write its progress and results.

Started by app/lab/jobs.py's dispatcher, which already claimed the run and holds this machine's
lab lock, with DATABASE_URL, the thread count and the time limit. It dies with the server that
started it (die_with_parent); a hard alarm backs up the runner's own deadline, in case an
experiment hangs between progress reports.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from typing import Any

from sqlmodel import Session

from app.db import make_engine
from app.enums import LabRunStatus
from app.lab.experiments import Plan
from app.lab.runner import SIZES, LabTimeout, run_plan
from app.models import LabRun, utcnow
from app.services.child_jobs import die_with_parent
from graders.wording import describe

PROGRESS_EVERY_S = 0.25  # at most four progress writes a second


def _update(engine: Any, run_id: str, **fields: Any) -> None:
    with Session(engine) as session:
        run = session.get(LabRun, run_id)
        if run is None:
            return
        for key, value in fields.items():
            setattr(run, key, value)
        run.heartbeat_at = utcnow()
        session.commit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.lab.child")
    parser.add_argument("run_id")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--nice", type=int, default=10)
    args = parser.parse_args(argv)
    die_with_parent()
    # Here rather than in a preexec_fn (unsafe in the threaded process that starts us):
    # grading and pages come first on the CPU.
    os.nice(args.nice)
    engine = make_engine(os.environ["DATABASE_URL"])
    with Session(engine) as session:
        run = session.get(LabRun, args.run_id)
        if run is None or run.status in (LabRunStatus.DONE, LabRunStatus.FAILED):
            return 0
        size, experiments = run.size, list(run.experiments)

    _update(
        engine,
        args.run_id,
        status=LabRunStatus.RUNNING,
        progress=0.0,
        message="starting",
        started_at=utcnow(),
    )
    signal.alarm(int(args.time_limit) + 30)  # the hard stop behind the runner's deadline
    config, plan = SIZES[size]
    plan = Plan(**{**plan.__dict__, "experiments": tuple(experiments)})
    last = 0.0

    def progress(fraction: float, message: str) -> None:
        nonlocal last
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            _update(engine, args.run_id, progress=round(fraction, 3), message=message[:300])

    try:
        result = run_plan(config, plan, progress=progress, threads=args.threads, time_limit_s=args.time_limit)
    except LabTimeout as exc:
        _update(engine, args.run_id, status=LabRunStatus.FAILED, error=str(exc), finished_at=utcnow())
        return 1
    except Exception as exc:  # a failed run says why on its page, never a silent "running"
        _update(
            engine,
            args.run_id,
            status=LabRunStatus.FAILED,
            error=describe(exc)[:500],
            finished_at=utcnow(),
        )
        return 1
    _update(
        engine,
        args.run_id,
        status=LabRunStatus.DONE,
        progress=1.0,
        message="done",
        result=result,
        finished_at=utcnow(),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
