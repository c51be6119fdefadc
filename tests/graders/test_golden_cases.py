"""Golden submissions (tests/graders/golden.py: the case files, and each challenge's solution and starter),
each with the verdict it must get."""

from __future__ import annotations

import pytest

from graders.checks import load_check
from graders.sandbox.inprocess import InProcessLink
from graders.sandbox.protocol import LoadError
from tests.graders.golden import Case, golden_cases


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: c.id)
def test_golden_case_in_process(case: Case) -> None:
    """The battery's verdict on each golden case (in-process: checks logic only, no sandbox)."""
    expect, phrases = case.expected()
    if expect not in {"passed", "failed", "error"}:
        pytest.skip("limits are only enforced by the sandbox")
    if case.outside_only:
        pytest.skip("measured from outside the submission's process: the sandbox harness judges it")
    check = load_check(case.slug)
    try:
        session = InProcessLink(case.path.read_text(), filename=case.path.name)
    except LoadError:
        assert expect == "error"
        return
    if not session.has(check.ENTRY_POINT):
        assert expect == "error"
        return
    report = check.run(session)
    verdict = "passed" if report.tests and all(t.passed for t in report.tests) else "failed"
    assert verdict == expect, [t for t in report.tests if not t.passed]
    feedback = " ".join(report.diagnosis + [t.message for t in report.tests])
    for phrase in phrases:
        assert phrase in feedback, f"expected {phrase!r} in the feedback: {feedback}"
