"""The candidate's corrections of their report's rubric: a rating of their own for a signal.

The rubric is recomputed from the answer each time the report is built (rubric.py), so a
correction is kept on its own, by signal, and shown beside the computed rating; a correction to
the computed rating is shown as none. A signal the question gives nothing to rate on
(rubric.py: "not rated") keeps no correction: the report drops it. Neither the score nor what went
into spaced repetition changes.
"""

from __future__ import annotations

from sqlmodel import Session

from app.enums import MockItemKind, RubricSignal
from app.models import MockInterview
from app.services.errors import Conflict, InvalidInput, NotFound
from app.services.mock.interviews import mock_items
from app.services.mock.rubric import RATING_NAMES


def correct_signal(*, session: Session, mock: MockInterview, position: int, signal: str, rating: int) -> None:
    """Keep the user's `rating` (1-4) of `signal` for the question at `position`. Commits."""
    if mock.scored_at is None:
        raise Conflict("Score the interview before correcting its rubric.")
    if signal not in set(RubricSignal):
        raise InvalidInput(f"No signal named {signal!r}: one of {', '.join(RubricSignal)}.", field="signal")
    if rating not in RATING_NAMES:
        raise InvalidInput("A rating is a whole number from 1 to 4.", field="rating")
    item = next((i for i in mock_items(session=session, mock=mock) if i.position == position), None)
    if item is None or item.kind == MockItemKind.CHALLENGE or item.asked_at is None:
        raise NotFound("No question with a rubric at that position.")
    # A new dict, so that the JSON column is seen as changed.
    item.rubric_corrections = {**(item.rubric_corrections or {}), signal: rating}
    session.add(item)
    session.commit()
