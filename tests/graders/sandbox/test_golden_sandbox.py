"""Every golden case gets its expected verdict through the real sandbox, not only in-process."""

from __future__ import annotations

import pytest

from graders.runner import grade
from tests.graders.golden import Case, golden_cases


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: c.id)
def test_golden_case_in_the_sandbox(case: Case) -> None:
    expect, phrases = case.expected()
    result = grade(case.slug, case.path.read_text())
    assert result.verdict.value == expect, result.to_json()
    if result.verdict.value in ("passed", "failed"):
        feedback = " ".join(result.diagnosis + [t.message for t in result.tests])
        for phrase in phrases:
            assert phrase in feedback, f"expected {phrase!r} in the feedback: {feedback}"
