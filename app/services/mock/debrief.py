"""The debrief of a scored mock answer: for each key point it missed, the strong answer's wording
beside the closest the candidate came, so they see what a strong answer had that theirs lacked.

"Closest" is the clause of their answer or follow-up answer that shares the most of the point's
content words (the lexical matcher's measure, app/services/key_point_matcher.py); a clause that
shares none is no near miss, and the point reads as not touched at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from app.enums import MockItemKind
from app.models import MockItem
from app.services.key_point_matcher import clauses, plain
from app.services.wrong_answers import content_words


@dataclass(frozen=True)
class Missed:
    point: int  # the key point's index
    strong: str  # the strong answer's wording of it
    yours: str | None  # the closest clause of the candidate's answers; None: nothing near it


def closest(texts: Sequence[str], point: str) -> str | None:
    """The clause of `texts` sharing the most content words with `point` (the first of a tie)."""
    wanted = content_words(plain(point))
    best, most = None, 0
    for text in texts:
        for clause in clauses(text):
            shared = len(wanted & content_words(clause))
            if shared > most:
                best, most = clause, shared
    return best


def missed_points(
    key_points: Sequence[str], covered: AbstractSet[int], answer: str, follow_up_answer: str = ""
) -> list[Missed]:
    """Each key point not ticked as covered, in order of importance, with the closest wording."""
    texts = [t for t in (answer, follow_up_answer) if t]
    return [Missed(i, p, closest(texts, p)) for i, p in enumerate(key_points) if i not in covered]


def debrief_of(item: MockItem, key_points: Sequence[str]) -> list[Missed]:
    """A scored mock question's missed points: spoken questions the clock reached only (a numeric or
    multiple-choice answer was checked, with the strong answer beside it already)."""
    if item.kind != MockItemKind.RECALL or item.asked_at is None:
        return []
    return missed_points(key_points, set(item.covered or []), item.answer or "", item.follow_up_answer or "")
