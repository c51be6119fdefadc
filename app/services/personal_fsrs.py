"""Personal scheduling: FSRS parameters fitted to the user's own review log, off the request path.

fsrs's Optimizer (the `fsrs[optimizer]` extra: torch, pandas, tqdm) learns the 21 parameters
from the log. It only learns from reviews that happen a day or more after the card's previous
review (same-day repeats say nothing about forgetting over days), reads at most the first 64
reviews of each card, and returns the defaults unchanged while it has fewer than 512 such
reviews: one mini-batch, its `mini_batch_size`. So 512 is the threshold here too, counted the
same way, and the settings page says how many more are needed.

A fit takes seconds to tens of seconds of torch and Python (see /work/notes/scheduling.md for the
measurement), so the request only stores an FsrsFit row and queues it on the grading queue's
huey; the worker starts `python -m app.services.personal_fsrs FIT_ID`, a niced child process,
like the lab's runs, and returns at once. The child writes the parameters onto the user, and
the scheduler (app/services/scheduling/scheduler.py, parameters_for) uses them from then on.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from fsrs import Rating, ReviewLog
from fsrs.scheduler import LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS
from huey.api import Huey
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.config import Settings
from app.enums import FitStatus
from app.models import FsrsFit, Review, User, utcnow
from app.services.child_jobs import child_task, die_with_parent, start_child
from app.services.errors import Conflict, NotReady, ServiceError
from app.services.scheduling import parameters_for

log = logging.getLogger("kvprep.fsrs_fit")
TASK_NAME = "kvprep.fsrs_fit"
# fsrs.optimizer.mini_batch_size: with fewer counted reviews compute_optimal_parameters returns
# the defaults untouched, so a fit below it would only pretend to be personal.
FIT_MIN_REVIEWS = 512
# fsrs.optimizer.max_seq_len: reviews of a card after its first 64 are not read.
MAX_SEQ_LEN = 64
# A queued or running fit older than this counts as lost (its child died): the user may fit again.
FIT_STALE = timedelta(minutes=15)
# The child's own deadline. The optimizer reads at most 64 reviews per card (about 7,900 for this
# bank) five times; 2,880 counted reviews took 90 s on a machine loaded 5x over (scheduling.md).
FIT_TIME_LIMIT_S = 600
FIT_NICE = 10


def _histories(session: Session, user_id: int) -> dict[str, list[tuple[datetime, int]]]:
    """Each card's reviews, oldest first: (when, rating)."""
    rows = session.exec(
        select(Review.card_id, Review.reviewed_at, Review.rating)
        .where(Review.user_id == user_id)
        .order_by(col(Review.reviewed_at), col(Review.id))
    ).all()
    out: dict[str, list[tuple[datetime, int]]] = {}
    for card_id, moment, rating in rows:
        out.setdefault(card_id, []).append((moment, rating))
    return out


def _counted(histories: dict[str, list[tuple[datetime, int]]]) -> int:
    """The reviews the optimizer learns from, counted as it counts them: within a card's first 64,
    each one a whole day (24 h) or more after that card's previous review."""
    n = 0
    for history in histories.values():
        head = history[:MAX_SEQ_LEN]
        n += sum(
            1 for (before, _), (after, _r) in zip(head, head[1:], strict=False) if (after - before).days > 0
        )
    return n


def counted_reviews(*, session: Session, user_id: int) -> int:
    return _counted(_histories(session, user_id))


def review_logs(*, session: Session, user_id: int) -> list[ReviewLog]:
    """The user's log as fsrs ReviewLogs; fsrs wants integer card ids, numbered by first review."""
    histories = _histories(session, user_id)
    order = sorted(histories, key=lambda card: histories[card][0][0])
    return [
        ReviewLog(card_id=number, rating=Rating(rating), review_datetime=moment, review_duration=None)
        for number, card in enumerate(order, start=1)
        for moment, rating in histories[card]
    ]


def fit_parameters(logs: Sequence[ReviewLog]) -> list[float]:
    """fsrs's optimizer over these logs, clamped into fsrs's bounds (the Scheduler refuses others)."""
    from fsrs import Optimizer  # torch and pandas load here, in the fitting child, not in every page

    fitted = Optimizer(list(logs)).compute_optimal_parameters()
    return [
        min(max(float(p), low), high)
        for p, low, high in zip(fitted, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS, strict=True)
    ]


# --- what the settings page shows -----------------------------------------------------------------


@dataclass(frozen=True)
class PersonalScheduling:
    reviews: int  # every review in the log
    counted: int  # those the optimizer learns from
    personal: bool  # the scheduler uses parameters fitted to this user
    parameters: tuple[float, ...]  # the ones it uses now
    fit: FsrsFit | None  # the latest fit, whatever its outcome
    fit_pending: bool  # queued or running, and not lost

    @property
    def needed(self) -> int:
        """Counted reviews still missing before a fit can learn anything."""
        return max(0, FIT_MIN_REVIEWS - self.counted)

    @property
    def can_fit(self) -> bool:
        return self.needed == 0 and not self.fit_pending


def latest_fit(*, session: Session, user_id: int) -> FsrsFit | None:
    return session.exec(
        select(FsrsFit).where(FsrsFit.user_id == user_id).order_by(col(FsrsFit.created_at).desc())
    ).first()


def is_pending(fit: FsrsFit | None, now: datetime) -> bool:
    return (
        fit is not None
        and fit.status in (FitStatus.QUEUED, FitStatus.RUNNING)
        and now - fit.created_at < FIT_STALE
    )


def personal_scheduling(*, session: Session, user: User, now: datetime) -> PersonalScheduling:
    assert user.id is not None
    histories = _histories(session, user.id)
    fit = latest_fit(session=session, user_id=user.id)
    return PersonalScheduling(
        reviews=sum(len(h) for h in histories.values()),
        counted=_counted(histories),
        personal=user.fsrs_parameters is not None,
        parameters=parameters_for(user),
        fit=fit,
        fit_pending=is_pending(fit, now),
    )


def fit_error(fit: FsrsFit | None, now: datetime) -> str | None:
    """Why the latest fit gave nothing, in words; None when it worked or is still under way."""
    if fit is None or fit.status == FitStatus.DONE or is_pending(fit, now):
        return None
    if fit.status == FitStatus.FAILED:
        return fit.error or "The fit failed."
    return "The fit stopped without a result (its worker was restarted). Fit again."


# --- asking for a fit, resetting ------------------------------------------------------------------


def request_fit(*, session: Session, user: User, now: datetime | None = None) -> FsrsFit:
    """Store a queued fit for this user.

    NotReady when there is too little data, Conflict when one is under way or nothing is new.
    """
    now = now or utcnow()
    assert user.id is not None
    state = personal_scheduling(session=session, user=user, now=now)
    if state.fit_pending:
        raise Conflict("A fit is already under way: this page shows its result when it is done.")
    if (
        state.personal
        and state.fit is not None
        and state.fit.status == FitStatus.DONE
        and state.fit.reviews == state.counted
    ):
        raise Conflict("Your parameters are already fitted to these reviews: fit again after more reviews.")
    if state.needed:
        raise NotReady(
            f"Too few reviews to fit: the optimizer needs {FIT_MIN_REVIEWS} reviews made a day or more "
            f"after the card's previous one, and you have {state.counted}. "
            f"{state.needed} more to go."
        )
    fit = FsrsFit(id=secrets.token_hex(12), user_id=user.id, reviews=state.counted, created_at=now)
    session.add(fit)
    session.commit()
    session.refresh(fit)
    return fit


def reset_parameters(*, session: Session, user: User) -> None:
    """Back to fsrs's default parameters. Commits."""
    user.fsrs_parameters = None
    session.add(user)
    session.commit()


# --- the job --------------------------------------------------------------------------------------


def run_fit(engine: Engine, fit_id: str) -> FsrsFit | None:
    """Fit one stored request and put the result on the user. Every outcome is written on the row."""
    with Session(engine) as session:
        fit = session.get(FsrsFit, fit_id)
        if fit is None or fit.status in (FitStatus.DONE, FitStatus.FAILED):
            return fit
        user = session.get(User, fit.user_id)
        if user is None:
            return None
        fit.status, fit.started_at = FitStatus.RUNNING, utcnow()
        session.add(fit)
        session.commit()
        assert user.id is not None
        logs = review_logs(session=session, user_id=user.id)
        fit.reviews = counted_reviews(session=session, user_id=user.id)
        started = time.perf_counter()
        try:
            if fit.reviews < FIT_MIN_REVIEWS:  # reviews undone since the request
                raise Conflict(f"Too few reviews to fit: {fit.reviews} of {FIT_MIN_REVIEWS}.")
            parameters = fit_parameters(logs)
        except Exception as exc:  # the row says what went wrong; the worker goes on
            log.exception("fsrs fit %s failed", fit_id)
            message = exc.message if isinstance(exc, ServiceError) else _describe(exc)
            fit.status, fit.error = FitStatus.FAILED, message[:500]
        else:
            fit.status, fit.parameters = FitStatus.DONE, parameters
            user.fsrs_parameters = parameters
            session.add(user)
        fit.seconds = round(time.perf_counter() - started, 3)
        fit.finished_at = utcnow()
        session.add(fit)
        session.commit()
        session.refresh(fit)
        return fit


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def launch_child(fit_id: str, settings: Settings) -> subprocess.Popen[bytes]:
    """Start the child that runs one fit (torch on one thread); never waits for it."""
    return start_child(["app.services.personal_fsrs", fit_id], database_url=settings.database_url, threads=1)


class FitJobs:
    """Queue fits on the grading queue's huey; its worker launches each fit's child and returns."""

    def __init__(self, huey: Huey, settings: Settings) -> None:
        self._task = child_task(huey, TASK_NAME, lambda fit_id: launch_child(fit_id, settings), "fsrs fit")

    def submit(self, *, session: Session, user: User, now: datetime | None = None) -> FsrsFit:
        fit = request_fit(session=session, user=user, now=now)
        self._task(fit.id)
        return fit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.services.personal_fsrs")
    parser.add_argument("fit_id")
    args = parser.parse_args(argv)
    die_with_parent()  # a fit ends with the server that started it
    os.nice(FIT_NICE)  # pages and grading come first on the CPU

    def out_of_time(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"the fit ran past {FIT_TIME_LIMIT_S} s")

    # Raised inside the optimizer, so run_fit writes the row as failed, with this reason.
    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(FIT_TIME_LIMIT_S)
    from app.db import make_engine

    engine = make_engine(os.environ["DATABASE_URL"])
    fit = run_fit(engine, args.fit_id)
    engine.dispose()
    return 0 if fit is not None and fit.status == FitStatus.DONE else 1


if __name__ == "__main__":
    raise SystemExit(main())
