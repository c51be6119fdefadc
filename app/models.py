"""SQLModel tables and the public shapes the API returns.

Cards are synced from questions/ (app/services/content_sync.py); the file is the
source of truth and the row is what pages, search and progress point at.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, Dialect, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

from app.enums import (
    Difficulty,
    FitStatus,
    FollowUpDifficulty,
    LabRunStatus,
    MockEndedBy,
    MockItemKind,
    QuestionKind,
    QuizMode,
    ReviewSource,
    SubmissionStatus,
)
from graders.verdict import Verdict


def utcnow() -> datetime:
    return datetime.now(UTC)


# The cards' full-text index (migration 0011; app/services/card_search.py) is not a model: an
# FTS5 virtual table with its shadow tables on SQLite, a tsvector table on PostgreSQL.
UNMODELLED_TABLE = re.compile(r"^card_search(_(data|idx|content|docsize|config))?$")


class EnumString(TypeDecorator[StrEnum]):
    """A StrEnum column stored as its value in a VARCHAR(length): the schema is the plain string
    column the migrations made (so none is needed), and a row read back holds the enum member."""

    impl = String
    cache_ok = True

    def __init__(self, enum: type[StrEnum], length: int) -> None:
        super().__init__(length)
        self.enum = enum

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else str(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> StrEnum | None:
        return None if value is None else self.enum(value)


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's filter: what autogenerate compares (everything but the unmodelled tables)."""
    return not (type_ == "table" and name is not None and UNMODELLED_TABLE.match(name))


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
    difficulty: Difficulty = Field(sa_type=EnumString(Difficulty, 10), index=True)
    # A card whose file was removed: hidden from lists, kept for everyone's history.
    retired: bool = Field(default=False, index=True)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


# One line of a card list.
class CardSummary(CardBase):
    tags: list[str]


# A card's follow-up as the API returns it: which key points it probes (indices) and how hard it is.
class FollowUpPublic(SQLModel):
    question: str
    answer: str
    probes: list[int] = []
    difficulty: FollowUpDifficulty = FollowUpDifficulty.SAME


# A whole card as the API returns it.
class CardPublic(CardSummary):
    question: str
    key_points: list[str]
    follow_ups: list[FollowUpPublic]
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


# A person: a guest (known by a random session token) or an account (email and password).
class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    guest_token: str | None = Field(default=None, unique=True, index=True, max_length=64)
    # Lower-cased; None for a guest.
    email: str | None = Field(default=None, unique=True, index=True, max_length=254)
    # pwdlib's argon2id hash; None for a guest.
    password_hash: str | None = Field(default=None, max_length=255)
    # FSRS's target probability of recall; None means the app's default (Settings.desired_retention).
    desired_retention: float | None = None
    # Every card is shown at least once before this day; reviews are never scheduled past it.
    interview_date: date | None = None
    created_at: datetime = Field(default_factory=utcnow)
    last_login_at: datetime | None = None
    # Part of every session's fingerprint: log-out and password change add one, which ends
    # every session signed before (a copied cookie included), on every server at once.
    session_version: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # FSRS's 21 parameters fitted to this user's own reviews (app/services/personal_fsrs.py);
    # None means fsrs's defaults.
    fsrs_parameters: list[float] | None = Field(default=None, sa_column=Column(JSON, nullable=True))

    @property
    def is_guest(self) -> bool:
        return self.email is None


# A graded attempt at a challenge; `result` is the verdict JSON of CONTRACT.md.
class Submission(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=32)
    user_id: int = Field(foreign_key="user.id", index=True)
    challenge: str = Field(index=True, max_length=80)
    code: str = Field(sa_column=Column(Text, nullable=False))
    status: SubmissionStatus = Field(
        default=SubmissionStatus.QUEUED, sa_type=EnumString(SubmissionStatus, 10)
    )
    verdict: Verdict | None = Field(default=None, sa_type=EnumString(Verdict, 20))
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(default_factory=utcnow, index=True)
    finished_at: datetime | None = None
    # The lease (app/services/leases.py): who holds it now (a token per claim, never reused) and
    # when it runs out. A queued row's lease is when the reaper queues it again if nobody claimed
    # it (its task lost with a killed worker); a running row's, when its grader counts as dead.
    lease_owner: str | None = Field(default=None, max_length=32)
    lease_expires_at: datetime | None = Field(default=None, index=True)
    # Claims so far: a submission whose graders keep dying gets an error verdict after a few.
    attempts: int = 0


# A user's FSRS memory of one card (fsrs.Card's fields): what the scheduler needs for the next due date.
class CardProgress(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("user_id", "card_id"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    card_id: str = Field(foreign_key="card.id", max_length=80)
    state: int = 1  # fsrs.State: 1 learning, 2 review, 3 relearning
    step: int | None = 0
    stability: float | None = None
    difficulty: float | None = None
    due: datetime = Field(default_factory=utcnow, index=True)
    last_review: datetime | None = None
    reps: int = 0
    lapses: int = 0


# One quiz: how its cards were chosen, and when it was finished. (The table keeps the class's
# first name, "quizsession", and QuizItem.quiz_id's column keeps "session_id": renaming them would
# only move data.)
class Quiz(SQLModel, table=True):
    __tablename__ = "quizsession"
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    mode: QuizMode = Field(sa_type=EnumString(QuizMode, 10))
    topics: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    difficulty: Difficulty | None = Field(default=None, sa_type=EnumString(Difficulty, 10))
    kinds: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    size: int
    created_at: datetime = Field(default_factory=utcnow, index=True)
    finished_at: datetime | None = None


# One question of a quiz: a card asked as recall, multiple choice or a numeric problem.
class QuizItem(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("session_id", "position"),)

    id: int | None = Field(default=None, primary_key=True)
    # The quiz it belongs to; the column keeps its first name (see Quiz above).
    quiz_id: int = Field(
        sa_column=Column("session_id", Integer, ForeignKey("quizsession.id"), index=True, nullable=False)
    )
    user_id: int = Field(foreign_key="user.id", index=True)  # the session's owner
    position: int
    card_id: str = Field(foreign_key="card.id", max_length=80)
    kind: QuestionKind = Field(sa_type=EnumString(QuestionKind, 10))
    # What was asked, with the expected answer (never sent before the user answers).
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # What the user answered: typed text, picked options, a number and its unit, ticked key points.
    response: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # What the key-point matcher pre-ticked for a typed recall answer: {"points": [...], "method":
    # "semantic" | "lexical"}; None without a typed answer or from before it existed.
    suggested: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    correct: bool | None = None
    rating: int | None = None  # fsrs.Rating: 1 Again, 2 Hard, 3 Good, 4 Easy
    answered_at: datetime | None = None
    rated_at: datetime | None = None
    due_after: datetime | None = None
    # A card rated Again is asked once more at the end of its quiz: this is the item it repeats.
    repeat_of: int | None = Field(default=None, foreign_key="quizitem.id")


# One rating of one card: the history behind the heatmap, the streak and the export.
class Review(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    card_id: str = Field(foreign_key="card.id", max_length=80)
    rating: int  # fsrs.Rating
    source: ReviewSource = Field(sa_type=EnumString(ReviewSource, 10))
    reviewed_at: datetime = Field(default_factory=utcnow, index=True)
    due_after: datetime
    quiz_item_id: int | None = Field(default=None, foreign_key="quizitem.id")
    # The card's CardProgress fields just before this review (None: it had no row yet), so an
    # undo puts them back exactly (app/services/quiz_learning.py).
    before: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


# A timed mock interview: its set-up, the server's clock (start and deadline), and its share link.
class MockInterview(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    minutes: int
    # The topics chosen; [] means every topic.
    topics: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    difficulty: Difficulty | None = Field(default=None, sa_type=EnumString(Difficulty, 10))  # None = mixed
    with_challenge: bool = False
    started_at: datetime = Field(default_factory=utcnow, index=True)
    deadline: datetime
    # When the clock stopped: the deadline, or earlier when every question was done or the user ended it.
    ended_at: datetime | None = None
    ended_by: MockEndedBy | None = Field(default=None, sa_type=EnumString(MockEndedBy, 10))
    scored_at: datetime | None = None
    # The read-only link's secret; None when the report is not shared (or the link was revoked).
    share_token: str | None = Field(default=None, unique=True, index=True, max_length=64)


# One step of a mock interview: a card asked as recall, numeric or multiple choice, or the coding problem.
class MockItem(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("interview_id", "position"),)

    id: int | None = Field(default=None, primary_key=True)
    interview_id: int = Field(foreign_key="mockinterview.id", index=True)
    user_id: int = Field(foreign_key="user.id", index=True)  # the interview's owner
    position: int
    kind: MockItemKind = Field(sa_type=EnumString(MockItemKind, 10))
    card_id: str | None = Field(default=None, foreign_key="card.id", max_length=80)
    challenge: str | None = Field(default=None, max_length=80)
    # What is asked, frozen at set-up (follow-up, numeric problem, options), with the expected answers.
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    answer: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    follow_up_answer: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # Picked options, a number and its unit with the check's message, or the coding problem's submission ids.
    response: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    correct: bool | None = None  # numeric and choice items, checked automatically
    asked_at: datetime | None = None
    answered_at: datetime | None = None
    done_at: datetime | None = None  # the follow-up answered too: the interviewer moves on
    # The user's own scoring once the clock stops: key points covered, and whether the follow-up was.
    covered: list[int] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # What the key-point matcher pre-ticked for the answer: {"points": [...], "method": "semantic"
    # | "lexical"}; None for an answer given before it existed, or no answer. `covered` is what the
    # user confirmed.
    suggested: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    follow_up_covered: bool | None = None
    # The user's own ratings of the report's rubric, by signal ({"clear": 3}); the computed ones
    # are recomputed from the answer, so both show (app/services/mock/corrections.py).
    rubric_corrections: dict[str, int] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # The fsrs.Rating the score fed into spaced repetition, and when it asks the card again: both
    # None for a question the user did not tick for review (app/services/mock/scoring.py).
    rating: int | None = None
    due_after: datetime | None = None


# A run of the lab's experiments for one user, done by a background job; the results as JSON.
class LabRun(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=32)
    user_id: int = Field(foreign_key="user.id", index=True)
    size: str = Field(max_length=10)  # full | tiny (see app/lab/runner.py SIZES)
    experiments: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: LabRunStatus = Field(default=LabRunStatus.QUEUED, sa_type=EnumString(LabRunStatus, 10))
    progress: float = 0.0  # 0..1
    message: str = Field(default="", max_length=300)
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    error: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    started_at: datetime | None = None  # when the job got this machine's lab lock
    heartbeat_at: datetime | None = None  # the job's last progress report: a stale one means it died
    finished_at: datetime | None = None
    # The client address that asked for it: the lab caps runs queued or running per address.
    client_address: str | None = Field(default=None, max_length=64, index=True)


# One fit of a user's FSRS parameters to their review log, done by a background job.
class FsrsFit(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=32)
    user_id: int = Field(foreign_key="user.id", index=True)
    status: FitStatus = Field(default=FitStatus.QUEUED, sa_type=EnumString(FitStatus, 10))
    reviews: int = 0  # the reviews the optimizer learns from (a day or more after the card's previous one)
    parameters: list[float] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    error: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    seconds: float | None = None  # how long the optimizer ran


# One counted event of a rate limit (app/services/ratelimit_db.py), in the database so that every
# process of a server, and a restarted one, count together. `at` and `expires` are Unix times.
class RateLimitHit(SQLModel, table=True):
    __tablename__ = "rate_limit_hit"
    __table_args__ = (Index("ix_rate_limit_hit_key_at", "key", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=250)
    at: float
    expires: float = Field(index=True)


# A personal API token (app/services/api_tokens.py), for scripts and `kvprep submit`: sent as
# `Authorization: Bearer`. Only the SHA-256 of the token is stored; the token is shown once.
class ApiToken(SQLModel, table=True):
    __tablename__ = "api_token"

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    name: str = Field(max_length=60)
    token_hash: str = Field(unique=True, index=True, max_length=64)
    # The token's first characters, so that its owner can tell tokens apart on the account page.
    prefix: str = Field(max_length=16)
    created_at: datetime = Field(default_factory=utcnow)
    last_used_at: datetime | None = None
