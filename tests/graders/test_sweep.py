"""The seed sweep (graders/sweep.py, `kvprep sweep`): CI's fixed handful of its seeds, and the
command itself. The full 200 seeds run with `kvprep sweep` before a battery change is done."""

from __future__ import annotations

import pytest

from graders.sweep import CHALLENGES, SweepCase, failing_cases, format_outcome, main, sweep_case

CI_SEEDS = (0, 1, 2, 14, 82)  # 14 and 82 once let a right answer fail a too-tight test


@pytest.mark.parametrize("case", failing_cases(with_passing=True), ids=lambda c: c.id)
def test_every_golden_case_on_the_ci_seeds(case: SweepCase) -> None:
    for seed in CI_SEEDS:
        outcome = sweep_case(case, range(seed, seed + 1))
        assert outcome.crashed is None, outcome.crashed
        assert not outcome.passed_on and not outcome.failed_on, format_outcome(outcome)
        assert not outcome.unnamed_on, format_outcome(outcome)


def test_a_mistake_that_passes_is_reported_with_its_seeds() -> None:
    right = SweepCase("kv-cache-bytes", CHALLENGES / "kv-cache-bytes" / "solution.py")  # called a mistake
    outcome = sweep_case(right, range(3))
    assert outcome.passed_on == [0, 1, 2]
    assert "fails on 0/3 seeds, PASSES on seeds [0, 1, 2]" in format_outcome(outcome)


def test_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seeds", "2", "--challenge", "kv-cache-bytes", "--with-passing"]) == 0
    out = capsys.readouterr().out
    assert "golden mistakes x 2 seeds" in out and "0 pass on some seed" in out and "0 failing" in out
    assert main(["--challenge", "no-such-challenge"]) == 2
    assert main(["--seeds", "0"]) == 2
