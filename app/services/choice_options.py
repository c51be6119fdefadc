"""The options of a multiple-choice question, of one form and with length giving nothing away.

A card's key points run to 150-550 characters and its common wrong answers to one line (26-120):
asked side by side, the longest option was right in 4,054 of 4,060 questions. So an option is

- one form: a key point's short form (its first sentence, or that sentence cut before a clause
  that explains, adds or illustrates) beside a wrong answer without its quotes; neither has
  bold (only key points did) or a closing full stop, and neither is over SHORT_MAX characters;
- drawn so length says nothing: whether the longest option is a right one is drawn first, as a
  random order of the options would have it (k right of n: k/n), and the same for the
  shortest; the right options (which of each key point's forms, too) and the wrong ones are
  then drawn to fit. tests/services/test_choice_lengths.py measures both over the whole bank.

A key point with no short form that passes `short_forms`' checks (a code span or bracket left
open, "both X" without "and Y", a dangling "the", under SHORT_MIN characters) is never offered as
an option; it stays a key point of the recall. A right option carries its key point in full,
shown once the question is answered.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# The longest an option may be: about the longest common wrong answer in the bank (119).
SHORT_MAX = 120
# A clause cut shorter than this is a label ("The price:"), not a statement.
CUT_MIN = 30
# Shorter than this says too little to be asked ("Yes", a bare number).
SHORT_MIN = 20
# Draws of the options tried for one drawn longest/shortest pattern, per number of right options.
ATTEMPTS = 24

# A sentence ends at . ! or ? followed by a space and what can start the next one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(*\"\u201c])")
# Where a statement may end early and stay true: before a clause that explains, adds or
# illustrates (never before "but", "unless" or "except", which would turn it).
_BREAKS = ("; ", " \u2014 ", " - ", ": ", " (", ", ", " because ", " so ", " which ", " and ", " while ")
# Words a cut statement must not end on.
_DANGLING = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "is", "of", "on", "or", "so",
             "than", "that", "the", "to", "which", "with"}  # fmt: skip


def _balanced(text: str) -> bool:
    """No code span, bracket or quotation left open by a cut, and no "both X" or "between X"
    left without its "and Y"."""
    if (text.count("`") - 3 * text.count("```")) % 2 or text.count("(") != text.count(")"):
        return False
    if text.count('"') % 2 or text.count("\u201c") != text.count("\u201d"):
        return False
    return not re.search(r"\b(both|between)\b(?!.*\band\b)", text)


def _tidy(text: str) -> str:
    """One line, no bold, no closing full stop or comma: the one form both kinds of option take
    (bold marks only key points, so it would tell them apart)."""
    text = " ".join(text.replace("**", "").split())
    return text.rstrip(" .,;:")


def short_forms(key_point: str) -> list[str]:
    """The key point as an option: its first sentence (with the next when the first is a label,
    "Invariance."), and each cut of it at a clause break, that is a balanced statement of
    SHORT_MIN to SHORT_MAX characters; longest first, maybe none."""
    text = " ".join(key_point.replace("**", "").split())
    ends = [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    end = next(e for e in ends if e >= CUT_MIN or e == len(text))
    sentence = _tidy(text[:end])
    candidates = [sentence]
    for brk in _BREAKS:
        cut = sentence.find(brk, CUT_MIN)
        while 0 <= cut <= SHORT_MAX:
            candidates.append(_tidy(sentence[:cut]))
            cut = sentence.find(brk, cut + 1)
    forms = []
    for candidate in sorted(set(candidates), key=len, reverse=True):
        last_word = candidate.rsplit(" ", 1)[-1].lower()
        if SHORT_MIN <= len(candidate) <= SHORT_MAX and _balanced(candidate) and last_word not in _DANGLING:
            forms.append(candidate)
    return forms


def wrong_form(answer: str) -> str:
    """A common wrong answer as an option: without the quotes the card writes it in, in one form."""
    text = answer.strip()
    for left, right in (('"', '"'), ("\u201c", "\u201d")):
        if len(text) > 1 and text.startswith(left) and text.endswith(right):
            text = text[1:-1]
    return _tidy(text)


@dataclass(frozen=True)
class Candidate:
    """An option that could be asked: its text as shown, and the index of what it came from (a
    key point of the card, or a wrong answer in the question's pool)."""

    text: str
    source: int


def _wrong_for(
    right: Sequence[Candidate],
    longest_right: bool,
    shortest_right: bool,
    n_wrong: int,
    pool: Sequence[Candidate],
) -> list[Candidate] | None:
    """n_wrong wrong options, taken in pool order, such that the longest option is a right one or
    not as `longest_right` says, and the shortest as `shortest_right` says; None when the pool
    has no such lengths."""
    low, high = min(len(c.text) for c in right), max(len(c.text) for c in right)
    texts = {c.text for c in right}
    pool = _distinct(c for c in pool if c.text not in texts)
    longer = [c for c in pool if len(c.text) > high]
    shorter = [c for c in pool if len(c.text) < low]
    taken = ([] if longest_right else longer[:1]) + ([] if shortest_right else shorter[:1])
    allowed = [
        c
        for c in pool
        if low < len(c.text) < high
        or (c in longer and not longest_right)
        or (c in shorter and not shortest_right)
    ]
    taken += [c for c in allowed if c not in taken][: n_wrong - len(taken)]
    if len(taken) < n_wrong or (not longest_right and not longer) or (not shortest_right and not shorter):
        return None
    return taken


def _distinct(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The candidates in order, each text once (two cards may share a wrong answer)."""
    seen: set[str] = set()
    out = []
    for c in candidates:
        if c.text not in seen:
            seen.add(c.text)
            out.append(c)
    return out


def _forms(
    points: Sequence[Sequence[Candidate]], n: int, attempt: int, longest_right: bool, rng: random.Random
) -> list[Candidate]:
    """n of the key points, each in one of its forms: any form on even attempts; on odd ones the
    form that leaves room for a wrong option beyond it (the shortest when the longest option must
    be wrong, else the longest), from the n + 1 points whose such forms go furthest once half
    the attempts have failed."""
    if attempt % 2 == 0:
        return [rng.choice(list(forms)) for forms in rng.sample(list(points), n)]
    end = [forms[-1] if not longest_right else forms[0] for forms in points]
    if attempt > ATTEMPTS // 2:
        end = sorted(end, key=lambda c: len(c.text), reverse=longest_right)[: n + 1]
    return rng.sample(end, n)


def draw(
    points: Sequence[Sequence[Candidate]],
    own: Sequence[Candidate],
    others: Sequence[Candidate],
    rng: random.Random,
) -> tuple[list[Candidate], list[Candidate]]:
    """(right, wrong): 1-3 of the key points (`points` holds each one's forms, longest first) and
    enough wrong answers for 4-5 options. Whether the longest and the shortest option are right
    is drawn first, as a random order of the options would have it (k of n each), and the options
    are then drawn to fit; when none fit, with one right option fewer (the pattern kept: a topic
    whose wrong answers are all short has room for a longer wrong one beside a single short key
    point). When no draw fits even then, the right ones are taken as drawn and the wrong ones as
    they come (18 of 4,060 questions over the bank)."""
    pool = [*rng.sample(list(own), len(own)), *rng.sample(list(others), len(others))]
    n_drawn = min(len(points), rng.choice([1, 2, 2, 3]))
    n = n_drawn + min(max(1, min(3, 5 - n_drawn)), len(_distinct(pool)))
    places = rng.sample(range(n), n_drawn)
    longest_right, shortest_right = n - 1 in places, 0 in places
    for n_right in range(n_drawn, 0, -1):
        for attempt in range(ATTEMPTS):
            right = _forms(points, n_right, attempt, longest_right, rng)
            wrong = _wrong_for(right, longest_right, shortest_right, n - n_right, pool)
            if wrong is not None:
                return right, wrong
    right = [rng.choice(list(forms)) for forms in rng.sample(list(points), n_drawn)]
    texts = {c.text for c in right}
    n_wrong = max(1, min(3, 5 - n_drawn))
    return right, _distinct(c for c in pool if c.text not in texts)[:n_wrong]
