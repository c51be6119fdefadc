"""A card's content, typed: what the file says, read from the row's JSON in one place.

`Card.data` is the parsed card file as JSON (app/services/content_sync.py). Code that asks
a card reads it through `content(card)` rather than `card.data["key_points"]`, so a field's
name and shape are written down once, and a row synced before a field existed still opens
(a missing list reads as empty, missing notes as "").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.models import Card


@dataclass(frozen=True)
class FollowUp:
    question: str
    answer: str
    # indices into the card's key points this follow-up probes, and same | harder (questions/README.md);
    # a row synced before the card format had them reads as probing nothing, at the card's level
    probes: tuple[int, ...] = ()
    difficulty: str = "same"


@dataclass(frozen=True)
class WrongAnswer:
    answer: str
    why: str


def as_json(part: FollowUp | WrongAnswer) -> dict[str, Any]:
    """A follow-up or wrong answer as the card file's JSON writes it (what payloads store)."""
    data = asdict(part)
    if isinstance(part, FollowUp):
        data["probes"] = list(part.probes)
    return data


@dataclass(frozen=True)
class CardContent:
    question: str
    key_points: tuple[str, ...]
    follow_ups: tuple[FollowUp, ...]
    wrong_answers: tuple[WrongAnswer, ...]
    sources: tuple[str, ...]
    notes: str
    figures: dict[str, str]


def content(card: Card) -> CardContent:
    """The card's question, key points, follow-ups, wrong answers, sources, notes and figures."""
    data: dict[str, Any] = card.data or {}
    return CardContent(
        question=data.get("question", ""),
        key_points=tuple(data.get("key_points", ())),
        follow_ups=tuple(
            FollowUp(f["question"], f["answer"], tuple(f.get("probes", ())), f.get("difficulty", "same"))
            for f in data.get("follow_ups", ())
        ),
        wrong_answers=tuple(WrongAnswer(w["answer"], w["why"]) for w in data.get("wrong_answers", ())),
        sources=tuple(data.get("sources", ())),
        notes=data.get("notes", ""),
        figures=dict(data.get("figures", {})),
    )
