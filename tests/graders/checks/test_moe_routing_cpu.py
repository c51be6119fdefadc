"""moe-routing's CPU-time rule with the child's clock scripted: when a slow call is retried and when not."""

from __future__ import annotations

from typing import Any

import pytest

from graders.checks import moe_routing_cpu as cpu
from graders.checks.report import CheckReport, Mismatch
from graders.checks.serving_common import Rng
from graders.reference.moe import moe_layer

REFERENCE_S = 0.02  # the budget is then 6 x 0.02 + 0.1 = 0.22 s


class ScriptedClock:
    """A link whose moe_layer answers right and whose child used the given CPU seconds per call."""

    def __init__(self, seconds: list[float]) -> None:
        self.seconds, self.clock, self.calls = list(seconds), 0.0, 0

    def cpu_seconds(self) -> float:
        return self.clock

    def call(self, target: str, *args: Any) -> Any:
        assert target == "moe_layer"
        self.clock += self.seconds[self.calls]
        self.calls += 1
        return moe_layer(*args)


@pytest.fixture(autouse=True)
def fixed_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "_reference_cpu", lambda args: REFERENCE_S)
    monkeypatch.setattr(cpu, "T", 64)  # the rule, not the size, is under test here


def judge(seconds: list[float]) -> tuple[str | None, ScriptedClock]:
    link = ScriptedClock(seconds)
    try:
        cpu.test_cpu_time(CheckReport(), link, Rng(3))  # type: ignore[arg-type]
    except Mismatch as exc:
        return str(exc), link
    return None, link


def test_under_budget_passes_on_one_call() -> None:
    failure, link = judge([0.05])
    assert failure is None and link.calls == 1


def test_a_slow_first_call_near_the_budget_is_retried_and_the_best_decides() -> None:
    failure, link = judge([0.30, 0.06])  # 1.4 x the budget, then well under it
    assert failure is None and link.calls == 2


def test_near_the_budget_on_every_call_fails_after_every_retry() -> None:
    failure, link = judge([0.30, 0.31, 0.29])
    assert failure is not None and cpu.DENSE_CPU in failure and link.calls == cpu.RETRIES


def test_far_over_the_budget_fails_at_once_without_spending_the_wall_clock_on_retries() -> None:
    failure, link = judge([0.65, 0.01, 0.01])  # dense work measured ~3 x the budget
    assert failure is not None and "0.65 s" in failure and link.calls == 1
