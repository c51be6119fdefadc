"""The interviewer's prompt for a specific mistake: a figure the card does not have, or a wrong
(or missed) multiple-choice option. Built from the card's own data, so deterministic.

- A wrong figure: a quantity of the answer (app/services/answer_quantities.py: a number with a
  unit) of a dimension the key points state (bytes, time, a ratio ...) that is near none of their
  figures, or one of their figures with the other prefix (GB for GiB). The nudge names what was
  said ("You said 256 KiB per token") and asks the key point holding the figure of that dimension
  closest to it, its figures blanked; the strong answer is that key point.
- A multiple-choice pick: a right option left unpicked gets the follow-up that probes its key
  point (a question on the option itself when none does); a wrong option picked with every right
  one gets asked what is wrong with it, its `why` as the strong answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from app.services import answer_quantities as aq
from app.services.card_content import CardContent
from app.services.key_point_matcher import plain
from app.services.mock.prompt import Prompt, blank_figures, probing

_PER = {"per", "a", "an", "each"}  # "per token", "a step": the words after a figure that say what it counts
_STOP = re.compile(r"[.,;:!?()]")
_NUMBER_PART = re.compile(r"^[\d,.]+\s?")


def said(text: str, q: aq.Quantity) -> str:
    """The figure as written, with what it counts when it says so ("256 KiB per token")."""
    at = text.find(q.text)
    rest = _STOP.split(text[at + len(q.text) :], maxsplit=1)[0].split()[:2] if at >= 0 else []
    per = rest if len(rest) == 2 and rest[0].lower() in _PER and re.fullmatch(r"[\w-]+", rest[1]) else []
    return " ".join([q.text.strip(), *per])


def _unit(q: aq.Quantity) -> str:
    """The unit as written ("GiB" of "16.00 GiB")."""
    return _NUMBER_PART.sub("", q.text) or q.unit


def _distance(a: aq.Quantity, b: aq.Quantity) -> float:
    return abs(math.log(abs(a.value) or 1e-30) - math.log(abs(b.value) or 1e-30))


def wrong_figure(asked: CardContent, text: str) -> Prompt | None:
    """The nudge for the first figure of `text` that contradicts the card's, or None."""
    per_point = [aq.quantities(p) for p in asked.key_points]
    card = [q for qs in per_point for q in qs]
    dims = {q.dimension for q in card}
    tol = aq.DEFAULT_TOLERANCE
    for given in aq.quantities(text):
        if given.dimension not in dims:
            continue
        swap = any(aq.swapped(given, q, tol) for q in card)
        if not swap and any(aq.near(given, q, tol) for q in card):
            continue
        # The key point whose figure of this dimension is closest to what was said (the first of a tie).
        i, stated = min(
            ((i, q) for i, qs in enumerate(per_point) for q in qs if q.dimension == given.dimension),
            key=lambda iq: (_distance(given, iq[1]), iq[0]),
        )
        what, blank = said(text, given), blank_figures(plain(asked.key_points[i]))
        check = f"check the unit: {_unit(given)} or {_unit(stated)}?" if swap else "check how you got it"
        return Prompt(
            f"You said {what}; {check}. What goes in the blank: “{blank}”?",
            asked.key_points[i],
            "wrong_number",
            f"asked because you said {what} where key point {i + 1} has {stated.text.strip()}",
            [i],
        )
    return None


def choice_prompt(asked: CardContent, question: dict[str, Any], picked: Sequence[int]) -> Prompt | None:
    """The probe for a multiple-choice answer that missed a right option or picked a wrong one;
    None for exactly the right ones."""
    options = question["options"]
    chosen = set(picked)
    wrong = [o for i, o in enumerate(options) if i in chosen and not o["correct"]]
    missed = [o for i, o in enumerate(options) if i not in chosen and o["correct"]]
    also = f" and picked “{wrong[0]['text']}”" if wrong else ""
    if missed:
        option = missed[0]
        point = option.get("key_point") or option["text"]
        k = asked.key_points.index(point) if point in asked.key_points else None
        reason = f"asked because you did not pick “{option['text']}”{also}"
        f = probing(asked.follow_ups, k) if k is not None else None
        if f is not None:
            return Prompt(f.question, f.answer, "probe", reason, list(f.probes), f.difficulty)
        return Prompt(
            f"You did not pick “{option['text']}”. Why is it true?",
            point,
            "probe",
            reason,
            [k] if k is not None else [],
        )
    if wrong:
        option = wrong[0]
        return Prompt(
            f"You picked “{option['text']}”. What is wrong with it?",
            option.get("why") or "",
            "nudge",
            f"asked because you picked a wrong option: “{option['text']}”",
        )
    return None
