"""The validated shape of a topic and of a question card."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.enums import Difficulty, FollowUpDifficulty

SLUG = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class Topic(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    slug: str = Field(pattern=SLUG)
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)


class FollowUpMeta(BaseModel):
    """The `{probes: [...], difficulty: ...}` line under a follow-up's heading."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # indices into the card's key points (0 is the first, the most important) that the follow-up probes
    probes: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
    difficulty: FollowUpDifficulty


class FollowUp(FollowUpMeta):
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)


class WrongAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: str = Field(min_length=1)
    why: str = Field(min_length=1)


class CardFrontMatter(BaseModel):
    """The YAML block at the top of a card file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=SLUG, max_length=80)
    title: str = Field(min_length=1, max_length=200)
    topic: str = Field(pattern=SLUG)
    difficulty: Difficulty
    tags: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)
    # figure name (app/content/figures.py) -> the exact text the card prints for it
    figures: dict[str, str] = Field(default_factory=dict)
    # a figure the card quotes rather than computes (a paper's measurement, a data sheet's peak)
    # -> where it comes from: one of `sources`, or a seed ("seed 001")
    quotes: dict[str, str] = Field(default_factory=dict)
    # A card that asks a question another card already asks is retired, not deleted: its file
    # stays (so everyone's history of it keeps its text) and names the live card that asks it now.
    superseded_by: str | None = Field(default=None, pattern=SLUG, max_length=80)

    @field_validator("tags")
    @classmethod
    def _tags_are_slugs(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if not re.match(SLUG, tag):
                raise ValueError(f"tag {tag!r} must be lower-case words joined by '-'")
        return tags


class Card(CardFrontMatter):
    """A complete card: front matter plus the sections parsed from the Markdown body."""

    question: str = Field(min_length=1)
    key_points: list[str] = Field(min_length=3)
    follow_ups: list[FollowUp] = Field(min_length=1)
    wrong_answers: list[WrongAnswer] = Field(min_length=1)
    notes: str = ""
    path: str  # relative to the bank's root, for error messages and the "edit this card" link

    def answer_text(self) -> str:
        """Everything a card says beyond its title and question: key points, tags, follow-ups."""
        parts = [*self.key_points, *self.tags]
        parts += [f.question + " " + f.answer for f in self.follow_ups]
        parts += [w.answer + " " + w.why for w in self.wrong_answers]
        return "\n".join(parts)

    def search_text(self) -> str:
        return "\n".join([self.title, self.question, self.answer_text()])
