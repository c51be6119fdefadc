"""Everything under questions/: the card bank and the challenges, validated together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.content.challenges import Challenge, load_challenges
from app.content.loader import Bank, ContentError, Problem, load_bank


@dataclass(frozen=True)
class Catalog:
    bank: Bank
    challenges: list[Challenge]

    def challenge(self, slug: str) -> Challenge | None:
        return next((c for c in self.challenges if c.slug == slug), None)


def load_catalog(root: Path) -> Catalog:
    """Load and validate cards and challenges; ContentError lists every problem of both."""
    problems: list[Problem] = []
    bank: Bank | None = None
    try:
        bank = load_bank(root)
    except ContentError as exc:
        problems += exc.problems
    topics = {t.slug for t in bank.topics} if bank else None
    challenges: list[Challenge] = []
    try:
        challenges = load_challenges(root, topics)
    except ContentError as exc:
        problems += exc.problems
    if problems or bank is None:
        raise ContentError(problems)
    return Catalog(bank, challenges)
