"""The verdict the challenge page polls carries the hint for the mistake it names (mistake_hints),
after CONTRACT.md's keys; a passing verdict carries none."""

from __future__ import annotations

import yaml
from fastapi.testclient import TestClient

from tests.routes.test_submissions import CHALLENGES, submit, wait_for_verdict

SLUG = "fix-causal-attention"


def test_a_failed_verdict_carries_the_named_mistakes_hints(grading_client: TestClient) -> None:
    hints = yaml.safe_load((CHALLENGES / SLUG / "challenge.yaml").read_text())["mistake_hints"]
    verdict = wait_for_verdict(
        grading_client, submit(grading_client, SLUG, (CHALLENGES / SLUG / "starter.py").read_text())
    )
    assert verdict["verdict"] == "failed"
    assert list(verdict)[:5] == ["challenge", "verdict", "tests", "diagnosis", "duration_ms"]
    assert list(verdict)[-1] == "mistake_hints"
    named = [h["mistake"] for h in verdict["mistake_hints"]]
    assert named[:3] == ["MASK_AFTER_SOFTMAX", "SCALE_SQRT_D", "MERGE_NO_TRANSPOSE"]
    assert all(h["hint"] == hints[h["mistake"]] for h in verdict["mistake_hints"])

    solution = (CHALLENGES / SLUG / "solution.py").read_text()
    passed = wait_for_verdict(grading_client, submit(grading_client, SLUG, solution))
    assert passed["verdict"] == "passed" and "mistake_hints" not in passed
