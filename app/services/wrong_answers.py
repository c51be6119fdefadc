"""Whether a typed answer echoes one of a card's common wrong answers, for the mock's report (and the quiz).

An answer "matches" a common wrong answer when it contains at least half of the wrong
answer's content words, at least three of them (all of them when it has fewer), and at least
one of its distinctive words. Content words are words of three letters or more that are not
stop words, compared after stripping a few endings (-ally, -ly, -ing, -ed, -es, -s, -e), so
"quadratically" meets "quadratic" and "caches" meets "cache". Distinctive words are the
content words found in at most a quarter of the bank's cards: "token", "cache" or "attention"
are in every answer, right or wrong, while "linear" or "approximation" are what makes a wrong
answer wrong. It is a prompt to re-read the card, not a verdict: "the cache does not grow
quadratically with the length" matches "it grows with the square of the sequence length,
because attention is quadratic".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from sqlmodel import Session, col, select

from app.models import Card

COMMON_SHARE = 0.25  # a word in more than this share of the cards is too common to tell a wrong answer

_STOP_WORDS = frozenset(
    """the a an and or but nor of to in on at for with by from as is are was were be been being it its
    this that these those there their they them then than so such not no do does did done can could
    would should will shall may might must have has had having you your we our me my he she his her
    which what who whom whose when where why how all any each every both few more most other some own
    same too very just also only into over under again once here about above below out off because
    while until else one two per via itself just like get gets got make makes made use uses used""".split()
)
_SUFFIXES = ("ally", "ly", "ing", "ed", "es", "s", "e")
_WORD = re.compile(r"[a-z][a-z0-9_]*")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP_WORDS}


def common_words(texts: Sequence[str], share: float = COMMON_SHARE) -> set[str]:
    """Content words found in more than `share` of the texts (one text per card)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(content_words(text))
    return {w for w, n in counts.items() if n > share * len(texts)}


_common_cache: dict[frozenset[str], set[str]] = {}


def bank_common_words(*, session: Session) -> set[str]:
    """common_words over the live cards, recomputed only when the bank changes."""
    key = frozenset(session.exec(select(Card.content_hash).where(col(Card.retired).is_(False))).all())
    if key not in _common_cache:
        texts = session.exec(select(Card.search_text).where(col(Card.retired).is_(False))).all()
        _common_cache.clear()
        _common_cache[key] = common_words(texts)
    return _common_cache[key]


def matches_wrong_answer(text: str, wrong: str, common: AbstractSet[str] = frozenset()) -> list[str]:
    """The content words an answer shares with a wrong answer if it matches (the rule above); else []."""
    theirs = content_words(wrong)
    shared = content_words(text) & theirs
    distinctive = theirs - common
    if (
        theirs
        and len(shared) >= min(3, len(theirs))
        and len(shared) >= len(theirs) / 2
        and (not distinctive or shared & distinctive)
    ):
        return sorted(shared)
    return []
