"""Verdicts are data, never exceptions: what a grading run produced, ready for JSON.

The JSON shape is fixed by shared/CONTRACT.md:
{"challenge", "verdict", "tests": [{"name", "passed", "message"}], "diagnosis", "duration_ms"}
plus an optional capped "output" excerpt of what the submission printed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Verdict(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # the code ran and at least one test failed
    ERROR = "error"  # could not load, missing entry point, or a blocked operation
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"


@dataclass(frozen=True)
class TestResult:
    """One named test of a battery; `message` explains a failure like an interviewer would."""

    __test__ = False  # not a pytest test class

    name: str
    passed: bool
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "message": self.message}


@dataclass
class Result:
    challenge: str
    verdict: Verdict
    tests: list[TestResult] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)
    duration_ms: int = 0
    output: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "challenge": self.challenge,
            "verdict": self.verdict.value,
            "tests": [t.to_json() for t in self.tests],
            "diagnosis": list(self.diagnosis),
            "duration_ms": self.duration_ms,
        }
        if self.output:
            data["output"] = self.output
        return data

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED
