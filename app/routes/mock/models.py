"""The mock interview API's bodies (what clients send) and response models (what they get)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt

from app.enums import Difficulty, MockEndedBy, MockItemKind, MockPhase, MockStatus, RubricSignal
from app.routes.challenge_models import SubmissionSummary
from app.routes.public import Number, Public, Timestamp, public_model
from app.routes.quiz.models import ChoiceOption
from app.services import mock as mocks
from app.validation import ApiModel, BodyIndex, BodyPosition, EmptyIsNone

TopicSlug = Annotated[str, Field(pattern=r"^[a-z0-9-]{1,80}$")]

# --- request bodies -------------------------------------------------------------------------------


# The set-up of a mock interview.
class MockCreate(ApiModel):
    minutes: StrictInt = Field(
        ge=1, le=10_000, description="15, 30, 45 or any custom length up to the server's maximum"
    )
    topics: list[TopicSlug] = Field(default_factory=list, max_length=50, description="[] means every topic")
    difficulty: Annotated[Difficulty | None, EmptyIsNone] = Field(
        default=None, description="null means mixed"
    )
    with_challenge: StrictBool = True
    card: str | None = Field(
        default=None,
        max_length=80,
        description="a one-question retry of this card (a report's debrief): the other fields are ignored",
    )


# An answer to the current question (`step` "question") or to its follow-up (`step` "follow_up").
class MockAnswer(ApiModel):
    position: BodyPosition
    step: Literal["question", "follow_up"] = "question"  # the MockPhase steps an answer may be to
    text: str = Field(default="", max_length=20_000)
    value: str | None = Field(default=None, max_length=100)  # numeric problems
    unit: str | None = Field(default=None, max_length=20)
    picked: list[BodyIndex] = Field(default_factory=list, max_length=20)  # multiple choice


# The user's scoring of one question: the key points covered, whether the follow-up was, and
# whether to schedule its card for review (their consent: false unless sent).
class MockMark(ApiModel):
    position: BodyPosition
    key_points: list[BodyIndex] = Field(default_factory=list, max_length=50)
    follow_up: StrictBool = False
    review: StrictBool = Field(
        default=False,
        description="schedule this question's card for review (spaced repetition); false unless sent",
    )


# The user's scoring of a whole interview.
class MockScore(ApiModel):
    items: list[MockMark] = Field(default_factory=list, max_length=100)


# The candidate's own rating of one signal of one answer's rubric.
class MockRubricCorrection(ApiModel):
    position: BodyPosition
    signal: RubricSignal
    rating: StrictInt = Field(ge=1, le=4, description="1 very weak, 2 weak, 3 strong, 4 very strong")


# --- the interview as it runs ---------------------------------------------------------------------


# The coding problem as the candidate sees it (`starter_code` only where asked for).
class MockChallengeView(Public):
    slug: str | None
    title: str | None
    prompt: str
    entry_point: str
    starter_code: str | None


# A numeric problem's input: the units offered, the expected one, and the model's config.
class MockNumericView(Public):
    units: list[str]
    unit: str
    config: dict[str, Any]


class MockChoiceView(Public):
    prompt: str
    options: list[ChoiceOption]


# The question being asked: never its expected answer. Keys by kind: `question` (all but the
# coding problem), `numeric`, `choice`, `challenge` with `submissions`; at the follow-up step,
# `answer` (what the candidate wrote) and `follow_up`.
class MockCurrent(Public):
    position: int
    kind: MockItemKind
    step: MockPhase
    question: str | None = None
    numeric: MockNumericView | None = None
    choice: MockChoiceView | None = None
    challenge: MockChallengeView | None = None
    submissions: list[SubmissionSummary] | None = None  # the interview's code, oldest first
    answer: str | None = None
    follow_up: str | None = None
    # Why the follow-up is asked (app/services/mock/interviewer.py): `harder` when the answer
    # covered every key point, so the page does not say it is digging into a gap.
    follow_up_kind: str | None = None


# A mock interview's state: the server's clock, progress and the current question.
class MockState(Public):
    id: int | None
    status: MockStatus
    minutes: int
    topics: list[str]
    difficulty: str | None
    with_challenge: bool
    started_at: Timestamp
    deadline: Timestamp
    now: Timestamp
    remaining_s: Number = Field(description="seconds left on the server's clock")
    ended_at: Timestamp | None
    ended_by: MockEndedBy | None
    questions: int
    done: int
    current: MockCurrent | None = Field(description="null unless the interview is running")
    shared: bool = Field(description="whether a share link of the report is live")


# A past or running interview in the user's history.
class MockSummary(Public):
    id: int | None
    status: MockStatus
    minutes: int
    topics: list[str]
    started_at: Timestamp
    ended_by: MockEndedBy | None
    score: Number | None = Field(description="0..1 once scored, else null")
    url: str


# A live share link of a report.
class MockShareLink(Public):
    token: str
    url: str


# --- the report ------------------------------------------------------------------------------------

# The report of an ended interview (app/services/mock's Report, whose to_json is its `asdict`):
# every question with the candidate's answer and the strong one, scores by topic, what to review.
MockReport = public_model(
    mocks.Report,
    "MockReport",
    "Mock",
    {
        mocks.Report: {"ended_by": MockEndedBy | None},
        mocks.ItemReport: {"kind": MockItemKind},
        mocks.SignalRating: {"signal": RubricSignal},
    },
)
