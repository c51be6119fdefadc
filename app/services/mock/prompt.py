"""What the interviewer's rules share: the prompt as asked (with why), the follow-up that probes
a key point, and the figures a text gives, read the same way by the interviewer's number request
and the rubric's quantitative signal (app/services/mock/rubric.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from app.enums import FollowUpDifficulty
from app.services.card_content import FollowUp
from app.services.key_point_matcher import plain

# A quantity standing as its own word ("512 KiB", "13.2 GB", "4.2x"), not part of a name or a
# dtype ("Llama-2-7B", "fp16").
_NUMBER = re.compile(r"(?<![\w.-])\d(?:[\d,.]*\d)?x?(?![\w-])")
# A citation in a key point or an answer ("(Leviathan et al., 2023)"): its year is no figure.
_CITATION = re.compile(r"\([^()]*(?:et al|arXiv)[^()]*\)")
_SHORT_WORDS = 14


@dataclass(frozen=True)
class Prompt:
    """The follow-up as asked: question and strong answer, and why it was chosen."""

    question: str
    answer: str
    kind: str  # nudge | wrong_number | probe | number | harder | follow_up
    reason: str
    probes: list[int] = field(default_factory=list)
    difficulty: str = FollowUpDifficulty.SAME

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def short(point: str) -> str:
    """A key point's first words, for a reason line."""
    words = plain(point).split()
    return " ".join(words[:_SHORT_WORDS]) + (" ..." if len(words) > _SHORT_WORDS else "")


def numbers(text: str) -> list[str]:
    """The numbers a text writes ("512", "13.2", "4.2x"), in order."""
    return _NUMBER.findall(text)


def value(figure: str) -> float:
    return float(figure.replace(",", "").rstrip("x"))


def figures(text: str) -> list[str]:
    """The numbers a text gives as figures: not a citation's year ("(Leviathan et al., 2023)"),
    not 0 or 1 (a mask's values, an index), which no interviewer asks to be put a number on."""
    return [n for n in numbers(_CITATION.sub("", text)) if value(n) not in (0.0, 1.0)]


def blank_figures(text: str) -> str:
    """`text` with each of its figures written ___ (a citation kept as it is)."""
    kept = {m.span() for m in _CITATION.finditer(text)}
    out, end = [], 0
    for m in _NUMBER.finditer(text):
        if any(a <= m.start() < b for a, b in kept) or value(m.group(0)) in (0.0, 1.0):
            continue
        out += [text[end : m.start()], "___"]
        end = m.end()
    return "".join([*out, text[end:]])


def probing(follow_ups: Sequence[FollowUp], point: int) -> FollowUp | None:
    """The follow-up that probes key point `point`: a `same` one before a `harder` one, in file order."""
    found = [f for f in follow_ups if point in f.probes]
    same = [f for f in found if f.difficulty == FollowUpDifficulty.SAME]
    return (same or found)[0] if found else None
