"""Golden submissions: tests/graders/cases/<slug>/<case>.py, each with the verdict it must get.

A case file starts with header comments:
    # expect: passed | failed | error | timeout | memory_limit
    # diagnosis: a phrase the diagnosis or a failed test's message must contain (optional, repeatable)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graders.checks import CHALLENGE_MODULES, load_check
from graders.sandbox.inprocess import InProcessSession
from graders.sandbox.session import LoadError

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Path]:
    return sorted(p for p in CASES.glob("*/*.py") if p.parent.name in CHALLENGE_MODULES)


def _header(path: Path) -> tuple[str, list[str]]:
    text = path.read_text()
    expect = re.search(r"^# expect: (\w+)", text, re.M)
    assert expect, f"{path} has no '# expect:' header"
    return expect.group(1), re.findall(r"^# diagnosis: (.+)$", text, re.M)


@pytest.mark.parametrize("case", _cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_case_in_process(case: Path) -> None:
    """The battery's verdict on each golden case (in-process: checks logic only, no sandbox)."""
    expect, phrases = _header(case)
    if expect not in {"passed", "failed", "error"}:
        pytest.skip("limits are only enforced by the sandbox")
    check = load_check(case.parent.name)
    try:
        session = InProcessSession(case.read_text(), filename=case.name)
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
