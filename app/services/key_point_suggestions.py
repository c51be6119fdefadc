"""Suggested key-point ticks, made when a free-text answer is submitted and kept beside it.

A quiz recall answer keeps its suggestion in `QuizItem.suggested`, a mock answer in
`MockItem.suggested`; both hold `{"points": [...], "method": ...}`. What the
user then ticks is stored apart (the quiz's `response["key_points"]`, the mock's
`covered`), so a report can show both: what the matcher suggested, what the user confirmed.
An answer without a suggestion (`suggested` is None) is read like any other.

The suggestion is made in the request that submits the answer (a plain form post works
without JavaScript); the routes that call in here are synchronous, so FastAPI runs them in
its thread pool and a first-use model load never blocks the event loop.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from app.enums import QuestionKind
from app.models import Card, MockItem
from app.services import numeric
from app.services.answer_quantities import DEFAULT_TOLERANCE
from app.services.key_point_matcher import Method, Suggestion, get_matcher


@dataclass(frozen=True)
class Suggested:
    """A stored suggestion, checked against the card it belongs to."""

    points: list[int]
    method: Method


def suggest_for_card(card: Card, text: str) -> Suggestion:
    return get_matcher().suggest(text, card.data["key_points"], card_tolerance(card.topic, card.tags))


def card_tolerance(topic: str, tags: Sequence[str]) -> float:
    """How far an answer's figure may be from a key point's and agree: the loosest tolerance of the
    numeric problems asked on the card (0.5% to 2%), else (none, or only exact counts)
    DEFAULT_TOLERANCE (2%). Cards state their
    figures to three digits, so an exact problem's 0 would reject a correct "4.5 GiB" for 4.50: a
    point's own rounding is always allowed on top (app/services/answer_quantities.agree)."""
    kinds = [k for k in numeric.TOPIC_GENERATORS.get(topic, ()) if numeric.FITS[k].fits(topic, tags)]
    return max((_kind_tolerance(k) for k in kinds), default=0.0) or DEFAULT_TOLERANCE


@functools.cache
def _kind_tolerance(kind: str) -> float:
    # A problem's tolerance does not depend on the draw: one generated problem gives it.
    return numeric.GENERATORS[kind](random.Random(0)).tolerance


def _stored(suggestion: Suggestion) -> dict[str, Any]:
    return {"points": suggestion.points, "method": suggestion.method.value}


def for_typed(card: Card | None, text: str) -> dict[str, Any] | None:
    """A quiz recall item's `suggested`: None when nothing was typed."""
    if card is None or not text.strip():
        return None
    return _stored(suggest_for_card(card, text))


def mock_fields(*, session: Session, item: MockItem, text: str) -> dict[str, Any]:
    """Extra column values for a mock answer: the suggestion, for a typed answer to a spoken question."""
    if item.kind != QuestionKind.RECALL or not item.card_id or not text.strip():
        return {}
    card = session.get(Card, item.card_id)
    if card is None:
        return {}
    return {"suggested": _stored(suggest_for_card(card, text))}


def read(stored: Any, n_points: int) -> Suggested | None:
    """A stored suggestion, or None when there is none (an older answer) or it does not fit the card."""
    if not isinstance(stored, dict):
        return None
    points = stored.get("points")
    try:
        method = Method(str(stored.get("method")))
    except ValueError:
        return None
    if not isinstance(points, list):
        return None
    return Suggested(sorted({p for p in points if isinstance(p, int) and 0 <= p < n_points}), method)
