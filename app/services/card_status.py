"""Where a visitor stands with each card: new, due now, or scheduled for later.

The one definition every page counts by (home, /quiz, /progress, /cards): a card is *seen* once
the user has a progress row for it, from a review or from a failed coding challenge on its topic
(which brings the card forward to due now, app/services/scheduling/history.py); *new* otherwise;
*due* when seen and its next review is not in the future.

Personal: pages show it per request and never keep it in a cache shared between visitors
(app/pages.py). A visitor without a user row has reviewed nothing, so every card is new.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from sqlmodel import Session, col, select

from app.models import CardProgress

# fsrs.State values kept in CardProgress.state: in its short learning steps, or relearning.
_LEARNING_STATES = {1, 3}


class CardStatus(StrEnum):
    NEW = "new"  # never reviewed
    DUE = "due"  # FSRS says: review it now
    LEARNING = "learning"  # in the short learning (or relearning) steps, not due yet
    LEARNED = "learned"  # in review, due later


@dataclass(frozen=True)
class CardStanding:
    status: CardStatus
    due: datetime | None = None  # the next review, for cards reviewed before

    @property
    def explanation(self) -> str:
        if self.status is CardStatus.NEW:
            return "You have not reviewed this card yet"
        if self.status is CardStatus.DUE:
            return "Due for review now"
        assert self.due is not None
        return f"Next review {self.due:%Y-%m-%d %H:%M} UTC"


NEW = CardStanding(CardStatus.NEW)


def _aware(moment: datetime) -> datetime:
    """SQLite hands datetimes back without their zone; they were stored in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def standing(progress: CardProgress | None, now: datetime) -> CardStanding:
    if progress is None:
        return NEW
    return _standing_of(progress.due, progress.state, now)


def standings(
    *, session: Session, user_id: int | None, card_ids: Iterable[str], now: datetime
) -> dict[str, CardStanding]:
    """Each card's standing for this user; one query for the lot (a page of the card list)."""
    ids = list(card_ids)
    if user_id is None or not ids:
        return dict.fromkeys(ids, NEW)
    # Three columns, not whole rows: no ORM objects to build for a page of the list.
    rows = session.exec(
        select(CardProgress.card_id, CardProgress.due, CardProgress.state).where(
            CardProgress.user_id == user_id, col(CardProgress.card_id).in_(ids)
        )
    ).all()
    mine = {card_id: _standing_of(due, state, now) for card_id, due, state in rows}
    return {card_id: mine.get(card_id, NEW) for card_id in ids}


def _standing_of(due: datetime, state: int, now: datetime) -> CardStanding:
    """`standing` from a row's due time and FSRS state."""
    due = _aware(due)
    if due <= now:
        return CardStanding(CardStatus.DUE, due)
    return CardStanding(CardStatus.LEARNING if state in _LEARNING_STATES else CardStatus.LEARNED, due)
