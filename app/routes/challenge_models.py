"""What the challenge and submission API answers (typed, so /docs documents it), and the one place
a submission becomes JSON.

The verdict JSON is CONTRACT.md's, key for key and in its order: `SubmissionPublic` declares the
fields in that order, and routes answer it with `response_model_exclude_none` so a submission still
grading is `{"id", "status"}` alone, and a verdict carries `output` only when there is some. The
models name every key a stored verdict carries (graders/verdict.py's `Result.to_json` and the
`mistake_hints` app/services/mistake_hints.py adds); a test pins the key list to CONTRACT.md's.
Timestamps stay the strings `datetime.isoformat()` writes (pydantic would write UTC as "Z").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.content.challenges import Challenge
from app.enums import Difficulty, SubmissionStatus
from app.models import Submission
from graders.verdict import Verdict


# A challenge as the list shows it.
class ChallengeSummary(BaseModel):
    slug: str
    title: str
    difficulty: Difficulty
    summary: str
    entry_point: str = Field(description="The name the grader calls in the submitted file")
    topics: list[str]


# A challenge's page: the summary, the prompt in Markdown, the starter code and the hints.
class ChallengePublic(ChallengeSummary):
    prompt: str
    starter_code: str
    hints: list[str]


# The worked solution, once the visitor has made a first attempt.
class ChallengeSolution(BaseModel):
    slug: str
    solution: str


# One test of a verdict.
class TestPublic(BaseModel):
    __test__ = False  # not a pytest test class

    name: str
    passed: bool
    message: str


# The hint for one known mistake a failed verdict names (app/services/mistake_hints.py).
class MistakeHint(BaseModel):
    mistake: str = Field(description="The mistake's stable id, e.g. NO_RESCALE")
    hint: str


# A submission: `{"id", "status"}` while grading, CONTRACT.md's verdict plus id and status once done.
class SubmissionPublic(BaseModel):
    challenge: str | None = None
    verdict: Verdict | None = None
    tests: list[TestPublic] | None = None
    diagnosis: list[str] | None = None
    duration_ms: int | None = None
    output: str | None = Field(default=None, description="A capped excerpt of what the code printed")
    id: str
    status: SubmissionStatus
    mistake_hints: list[MistakeHint] | None = Field(
        default=None, description="A failed verdict's hint per known mistake it names, in its order"
    )


# One line of a visitor's attempts at a challenge (newest first), with its score once graded.
class SubmissionSummary(BaseModel):
    id: str
    status: SubmissionStatus
    verdict: Verdict | None
    created_at: str = Field(description="When it was submitted (ISO 8601, UTC)")
    tests_passed: int | None = Field(default=None, description="Tests passed, once graded")
    tests_total: int | None = Field(default=None, description="Tests run, once graded")


# A past attempt's code, to read it again or load it into the editor.
class SubmissionCode(BaseModel):
    id: str
    challenge: str
    created_at: str
    code: str


def challenge_summary(c: Challenge) -> ChallengeSummary:
    return ChallengeSummary(
        slug=c.slug,
        title=c.meta.title,
        difficulty=c.meta.difficulty,
        summary=c.meta.summary,
        entry_point=c.meta.entry_point,
        topics=list(c.meta.topics),
    )


def challenge_public(c: Challenge) -> ChallengePublic:
    return ChallengePublic(
        **challenge_summary(c).model_dump(), prompt=c.prompt, starter_code=c.starter, hints=list(c.meta.hints)
    )


def verdict_public(submission_id: str, result: dict[str, Any]) -> SubmissionPublic:
    """A stored verdict (CONTRACT.md's JSON) as the API answers it."""
    return SubmissionPublic.model_validate({**result, "id": submission_id, "status": SubmissionStatus.DONE})


def submission_public(submission: Submission) -> SubmissionPublic:
    if submission.status == SubmissionStatus.DONE and submission.result is not None:
        return verdict_public(submission.id, submission.result)
    return SubmissionPublic(id=submission.id, status=SubmissionStatus(submission.status))


def submission_summary(submission: Submission) -> SubmissionSummary:
    tests = (submission.result or {}).get("tests") if submission.status == SubmissionStatus.DONE else None
    return SubmissionSummary(
        id=submission.id,
        status=SubmissionStatus(submission.status),
        verdict=Verdict(submission.verdict) if submission.verdict else None,
        created_at=submission.created_at.isoformat(),
        tests_passed=sum(1 for t in tests if t.get("passed")) if tests is not None else None,
        tests_total=len(tests) if tests is not None else None,
    )


def submission_code(submission: Submission) -> SubmissionCode:
    return SubmissionCode(
        id=submission.id,
        challenge=submission.challenge,
        created_at=submission.created_at.isoformat(),
        code=submission.code,
    )
