"""Personal scheduling: FSRS parameters fitted to the user's own log with fsrs's optimizer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fsrs import Optimizer, Rating, ReviewLog
from fsrs.scheduler import DEFAULT_PARAMETERS
from sqlmodel import Session, select

from app.config import Settings
from app.db import make_engine
from app.models import Card, FsrsFit, Review, User
from app.services import personal_fsrs, scheduling
from app.services.errors import ServiceError
from tests.services.factories import make_user
from tests.services.fsrs_logs import add_review_log

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def first_card(db: Session) -> str:
    return db.exec(select(Card.id).order_by(Card.id)).first() or ""


def test_reviews_are_counted_as_the_optimizer_counts_them(db: Session) -> None:
    user = make_user(db, email="a@example.com")
    assert user.id is not None
    card_id = first_card(db)
    t0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
    # First review, a same-day repeat, then 23 h later (not a whole day), then two days later.
    for offset in (timedelta(0), timedelta(minutes=10), timedelta(hours=23, minutes=10), timedelta(days=3)):
        db.add(Review(user_id=user.id, card_id=card_id, rating=3, source="recall", reviewed_at=t0 + offset,
                      due_after=t0))  # fmt: skip
    db.commit()
    assert personal_fsrs.counted_reviews(session=db, user_id=user.id) == 1
    state = personal_fsrs.personal_scheduling(session=db, user=user, now=NOW)
    assert (state.reviews, state.counted, state.needed, state.personal) == (4, 1, 511, False)
    assert not state.can_fit


def test_the_threshold_is_where_fsrs_starts_to_learn(db: Session) -> None:
    """Below 512 counted reviews fsrs's optimizer hands back its defaults: a fit would change nothing."""
    user = make_user(db, email="a@example.com")
    assert user.id is not None
    add_review_log(db, user.id, cards=85, reviews_per_card=7)  # 85 * 6 = 510 counted
    counted = personal_fsrs.counted_reviews(session=db, user_id=user.id)
    assert counted == 510 < personal_fsrs.FIT_MIN_REVIEWS
    logs = personal_fsrs.review_logs(session=db, user_id=user.id)
    assert all(isinstance(log, ReviewLog) and isinstance(log.rating, Rating) for log in logs)
    assert Optimizer(logs).compute_optimal_parameters() == list(DEFAULT_PARAMETERS)
    with pytest.raises(ServiceError, match="2 more to go") as refused:
        personal_fsrs.request_fit(session=db, user=user, now=NOW)
    assert refused.value.status == 409  # NotReady is a Conflict: the stored reviews decide it
    assert db.exec(select(FsrsFit)).all() == []


@pytest.mark.slow
def test_a_fit_gives_personal_parameters_the_scheduler_then_uses(
    db: Session, settings: Settings, db_url: str
) -> None:
    user = make_user(db, email="a@example.com")
    assert user.id is not None
    after = add_review_log(db, user.id, cards=100, reviews_per_card=7)
    fit = personal_fsrs.request_fit(session=db, user=user, now=after)
    assert fit.status == "queued" and fit.reviews == 600
    with pytest.raises(ServiceError, match="already under way") as twice:
        personal_fsrs.request_fit(session=db, user=user, now=after)
    assert twice.value.status == 409

    engine = make_engine(db_url)
    done = personal_fsrs.run_fit(engine, fit.id)
    engine.dispose()
    assert done is not None and done.status == "done" and done.seconds is not None
    db.expire_all()
    mine = db.get(User, user.id)
    assert mine is not None and mine.fsrs_parameters == done.parameters
    assert len(mine.fsrs_parameters) == 21 and mine.fsrs_parameters != list(DEFAULT_PARAMETERS)

    with pytest.raises(ServiceError, match="already fitted"):  # nothing new to learn from
        personal_fsrs.request_fit(session=db, user=mine, now=after)

    scheduler = scheduling.scheduler_for(user=mine, settings=settings, now=after)
    assert list(scheduler.parameters) == mine.fsrs_parameters
    review_at = after + timedelta(days=1)
    other = make_user(db, email="b@example.com")  # the defaults, the same reviews
    dues = []
    for learner in (mine, other):
        for days in (0, 1):  # Good, then Good a day later: out of the learning steps, on FSRS's curve
            progress = scheduling.review_card(
                session=db, user=learner, card_id=first_card(db), rating=Rating.Good, source="recall",
                settings=settings, now=review_at + timedelta(days=days),
            )  # fmt: skip
        dues.append(progress.due)
    assert dues[0] != dues[1]  # the personal parameters set the due date
    state = personal_fsrs.personal_scheduling(session=db, user=mine, now=review_at)
    assert state.personal and not state.fit_pending
    assert personal_fsrs.request_fit(session=db, user=mine, now=review_at).reviews == 602  # 2 new ones count

    personal_fsrs.reset_parameters(session=db, user=mine)
    assert mine.fsrs_parameters is None
    assert scheduling.scheduler_for(user=mine, settings=settings, now=after).parameters == DEFAULT_PARAMETERS


def test_a_lost_fit_stops_blocking_and_says_so(db: Session) -> None:
    user = make_user(db, email="a@example.com")
    assert user.id is not None
    add_review_log(db, user.id, cards=100, reviews_per_card=7)
    fit = personal_fsrs.request_fit(session=db, user=user, now=NOW)
    assert personal_fsrs.fit_error(fit, NOW) is None
    later = NOW + personal_fsrs.FIT_STALE + timedelta(seconds=1)
    assert "without a result" in (personal_fsrs.fit_error(fit, later) or "")
    assert personal_fsrs.request_fit(session=db, user=user, now=later).id != fit.id


def test_a_fit_whose_reviews_were_undone_fails_with_a_reason(db: Session, db_url: str) -> None:
    user = make_user(db, email="a@example.com")
    assert user.id is not None
    add_review_log(db, user.id, cards=100, reviews_per_card=7)
    fit = personal_fsrs.request_fit(session=db, user=user, now=NOW)
    for review in db.exec(select(Review).where(Review.card_id.in_(  # type: ignore[attr-defined]
            db.exec(select(Review.card_id).distinct()).all()[:20]))).all():  # fmt: skip
        db.delete(review)
    db.commit()
    engine = make_engine(db_url)
    failed = personal_fsrs.run_fit(engine, fit.id)
    engine.dispose()
    assert failed is not None and failed.status == "failed" and "Too few reviews" in (failed.error or "")
    db.expire_all()
    assert db.get(User, user.id).fsrs_parameters is None  # type: ignore[union-attr]
