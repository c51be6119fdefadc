"""The submission models name every key a stored verdict carries: with no `extra="allow"`, a key
the grader writes that SubmissionPublic does not name would be dropped from the API's answer."""

from __future__ import annotations

from app.routes.challenge_models import SubmissionPublic, TestPublic, verdict_public
from app.services.mistake_hints import with_mistake_hints
from graders.mistakes import named_mistakes
from graders.verdict import Result, TestResult, Verdict


def full_result() -> dict[str, object]:
    """A verdict with every optional key present: output, a failed test, a named mistake's hint."""
    slug = "tiled-attention"
    mistake, sentence = next(iter(named_mistakes(slug).items()))
    result = Result(
        challenge=slug,
        verdict=Verdict.FAILED,
        tests=[TestResult("shapes", False, "wrong")],
        diagnosis=[sentence],
        duration_ms=12,
        output="printed",
    ).to_json()
    return with_mistake_hints(result, {mistake: "The hint for it."})


def test_every_key_of_a_stored_verdict_is_a_field() -> None:
    result = full_result()
    assert "mistake_hints" in result and "output" in result
    assert set(result) | {"id", "status"} == set(SubmissionPublic.model_fields)
    assert set(TestResult("t", True).to_json()) == set(TestPublic.model_fields)


def test_the_api_answers_a_stored_verdict_key_for_key() -> None:
    result = full_result()
    answered = verdict_public("abc", result).model_dump(mode="json", exclude_none=True)
    assert {k: v for k, v in answered.items() if k not in ("id", "status")} == result
