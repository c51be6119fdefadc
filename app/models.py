"""SQLModel tables and the public shapes the API returns.

Cards are synced from questions/ (app/services/content_sync.py); the file is the
source of truth and the row is what pages, search and progress point at.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


# A study topic, synced from questions/topics.yaml.
class Topic(SQLModel, table=True):
    slug: str = Field(primary_key=True, max_length=80)
    title: str = Field(max_length=200)
    summary: str = Field(sa_column=Column(Text, nullable=False))
    position: int = 0


# Fields every view of a card shares.
class CardBase(SQLModel):
    id: str = Field(primary_key=True, max_length=80)
    title: str = Field(max_length=200)
    topic: str = Field(foreign_key="topic.slug", index=True, max_length=80)
    difficulty: str = Field(index=True, max_length=10)


# A card row: the parsed file as JSON, plus what search and sync need.
class Card(CardBase, table=True):
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    search_text: str = Field(default="", sa_column=Column(Text, nullable=False))
    content_hash: str = Field(max_length=64)
    path: str = Field(max_length=300)
    # A card whose file was removed: hidden from lists, kept for everyone's history.
    retired: bool = Field(default=False, index=True)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


# One line of a card list.
class CardSummary(CardBase):
    tags: list[str]


# A whole card as the API returns it.
class CardPublic(CardSummary):
    question: str
    key_points: list[str]
    follow_ups: list[dict[str, str]]
    wrong_answers: list[dict[str, str]]
    sources: list[str]
    notes: str
    retired: bool


# A page of card summaries.
class CardPage(SQLModel):
    items: list[CardSummary]
    total: int
    page: int
    page_size: int


# A person: a guest (known by a random session token) or, later, an account.
class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    guest_token: str | None = Field(default=None, unique=True, index=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow)


# A graded attempt at a challenge; `result` is the verdict JSON of CONTRACT.md.
class Submission(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=32)
    user_id: int = Field(foreign_key="user.id", index=True)
    challenge: str = Field(index=True, max_length=80)
    code: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(default="queued", max_length=10)  # queued | running | done
    verdict: str | None = Field(default=None, max_length=20)
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(default_factory=utcnow, index=True)
    finished_at: datetime | None = None
