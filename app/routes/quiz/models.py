"""The quiz API's bodies (what clients send) and response models (what they get)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StrictInt

from app.enums import Difficulty, QuestionKind, QuizItemState, QuizMode, RatingName
from app.routes.public import Number, Public, Timestamp
from app.services import quiz as quizzes
from app.validation import ApiModel, BodyIndex, EmptyIsNone


def _all_kinds() -> list[QuestionKind]:
    return list(QuestionKind)


# --- request bodies -------------------------------------------------------------------------------


# How to choose a quiz's cards.
class QuizCreate(ApiModel):
    mode: QuizMode = QuizMode.TOPICS
    topics: list[Annotated[str, Field(pattern=r"^[a-z0-9-]{1,80}$")]] = Field(
        default_factory=list, max_length=50
    )
    difficulty: Annotated[Difficulty | None, EmptyIsNone] = None
    size: StrictInt = Field(default=10, ge=1, le=10_000)
    kinds: list[QuestionKind] = Field(default_factory=_all_kinds, min_length=1, max_length=3)


# An answer: `answer` (recall, optional), `picked` (choice), `value` and `unit` (numeric).
class AnswerIn(ApiModel):
    answer: str | None = Field(default=None, max_length=quizzes.MAX_TYPED_ANSWER)
    picked: list[BodyIndex] = Field(default_factory=list, max_length=20)
    value: str | None = Field(default=None, max_length=100)
    unit: str | None = Field(default=None, max_length=20)


# A rating of a revealed recall question, with the indices of the key points the user got.
class RatingIn(ApiModel):
    rating: RatingName
    key_points: list[BodyIndex] = Field(default_factory=list, max_length=50)


# --- responses ------------------------------------------------------------------------------------


# One question of a quiz, as the quiz's list shows it.
class QuizItemRow(Public):
    position: int
    kind: QuestionKind
    card_id: str
    title: str
    state: QuizItemState
    rating: RatingName | None
    due: Timestamp | None = Field(description="when the card is due again, once rated")


# A quiz: how its cards were chosen, and its questions in order.
class QuizPublic(Public):
    id: int | None
    mode: QuizMode
    topics: list[str]
    difficulty: str | None
    kinds: list[QuestionKind]
    size: int
    created_at: Timestamp
    finished_at: Timestamp | None
    current: int | None = Field(description="the first question not done; null once all are")
    items: list[QuizItemRow]


# The card a question asks about.
class QuizCardRef(Public):
    id: str
    title: str
    topic: str
    difficulty: str


# One option of a multiple-choice question, as asked: without whether it is right.
class ChoiceOption(Public):
    index: int
    text: str


# An option of a quiz's multiple-choice question: `correct` and `why` (a wrong option's) or
# `key_point` (a right option's, in full: the option is its short form) only once it is answered.
class QuizOption(ChoiceOption):
    correct: bool | None = None
    why: str | None = None
    key_point: str | None = None


# One question. Keys by kind and state: `prompt` and `options` (choice); `prompt`, `units`,
# `config`, `tolerance`, `dimension` (numeric); once answered, `response`, `correct`,
# `key_points` and (numeric) `answer`, `answer_text`, `solution`; once rated, `rating` and `due`;
# once a recall answer is revealed, `suggested`.
class QuizItemPublic(Public):
    position: int
    kind: QuestionKind
    state: QuizItemState
    card: QuizCardRef
    question: str
    prompt: str | None = None
    options: list[QuizOption] | None = None
    units: list[str] | None = None
    config: dict[str, Any] | None = None
    tolerance: Number | None = None
    dimension: str | None = None
    response: dict[str, Any] | None = None
    correct: bool | None = None
    key_points: list[str] | None = None
    answer: Number | None = None
    answer_text: str | None = None
    solution: list[str] | None = Field(default=None, description="the worked solution, step by step")
    rating: RatingName | None = None
    due: Timestamp | None = None
    suggested: dict[str, Any] | None = Field(
        default=None,
        description="a recall answer's key points the matcher found (app/services/key_point_suggestions.py)",
    )
