"""Every golden case gets its expected verdict through the real sandbox, not only in-process."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graders.checks import CHALLENGE_MODULES
from graders.runner import grade

CASES = Path(__file__).parent.parent / "cases"


def _cases() -> list[Path]:
    return sorted(p for p in CASES.glob("*/*.py") if p.parent.name in CHALLENGE_MODULES)


@pytest.mark.parametrize("case", _cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_case_in_the_sandbox(case: Path) -> None:
    text = case.read_text()
    expect = re.search(r"^# expect: (\w+)", text, re.M)
    assert expect, f"{case} has no '# expect:' header"
    result = grade(case.parent.name, text)
    assert result.verdict.value == expect.group(1), result.to_json()
    if result.verdict.value in ("passed", "failed"):
        feedback = " ".join(result.diagnosis + [t.message for t in result.tests])
        for phrase in re.findall(r"^# diagnosis: (.+)$", text, re.M):
            assert phrase in feedback, f"expected {phrase!r} in the feedback: {feedback}"
