"""The moe-routing battery: the prompt's example, fresh inputs, named mistakes, the counted work."""

from __future__ import annotations

import torch

from graders.checks import moe_routing as check
from graders.checks.report import CheckReport
from graders.verdict import TestResult
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    cases_dir,
    challenge_dir,
    drawn_by_the_mock,
    passed,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check, "route", ("moe_layer(x, w_router, w_gate, w_up, w_down, top_k", "1.5 x the routed work")
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    x, w = torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    weights, experts = namespace["route"](x, w, 2)  # type: ignore[operator]
    assert experts.tolist() == [[0, 1]] and torch.allclose(
        weights, torch.tensor([[0.7311, 0.2689]]), atol=1e-4
    )
    weights, _ = namespace["route"](x, w, 2, renormalize=False)  # type: ignore[operator]
    assert torch.allclose(weights, torch.tensor([[0.5344, 0.1966]]), atol=1e-4)


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests)


def counted(report: CheckReport) -> TestResult:
    """The test that counts multiply-adds (the CPU-time test, measured outside, comes after it)."""
    return next(t for t in report.tests if "multiply-adds counted" in t.name)


def test_the_verdict_reports_multiply_adds_and_the_largest_tensor_against_the_reference() -> None:
    report, _ = run(check, SOLUTION, seed=3)
    work = counted(report)
    routed = 48 * 2 * 3 * 16 * 32 + 48 * 16 * 8
    assert work.passed and f"did {routed:,} multiply-adds (1.00x the routed work" in work.message
    assert f"the reference {routed:,}" in work.message and "largest tensor held" in work.message


def test_every_expert_on_every_token_fails_with_the_measured_ratio_in_words() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "dense_experts.py").read_text(), seed=5)
    work = counted(report)
    dense = 48 * 8 * 3 * 16 * 32 + 48 * 16 * 8
    assert not work.passed and check.DENSE in report.diagnosis
    assert f"runs every expert on every token: your moe_layer did {dense:,} multiply-adds" in work.message
    assert "3.88x the routed work" in work.message
    assert all(t.passed for t in report.tests if t is not work)  # the numbers are right: only the work fails
    # In-process the CPU time cannot be measured apart: that test passes saying so.
    assert "CPU time not measurable here" in report.tests[-1].message


def test_a_solution_that_does_the_work_twice_is_over_the_bound() -> None:
    twice = SOLUTION.replace(
        "        h = x[token]  #",
        "        _ = (F.silu(x[token] @ w_gate[e]) * (x[token] @ w_up[e])) @ w_down[e]\n"
        "        h = x[token]  #",
    )
    report, _ = run(check, twice, seed=2)
    assert (
        not passed(report) and "does more matrix work than the routed tokens need" in counted(report).message
    )


def test_both_renormalize_settings_are_tried_so_softmax_over_the_top_k_fails_exactly_one() -> None:
    code = (cases_dir(check.SLUG) / "softmax_over_topk_always.py").read_text()
    report, _ = run(check, code, seed=8)
    assert report.tests[0].passed and not report.tests[1].passed  # default passes, renormalize=False fails
    assert "renormalize=False" in report.tests[1].name and check.TOPK_SOFTMAX in report.diagnosis


def test_each_run_draws_fresh_inputs_unless_seeded() -> None:
    code = SOLUTION.replace(
        "def route(x, w_router, top_k, renormalize=True):",
        "SEEN = []\n\n\ndef route(x, w_router, top_k, renormalize=True):\n    SEEN.append(x.sum().item())",
    )
    a, b, c, d = seen_per_seed(check, code)
    assert a != b and c == d


def test_the_mock_interview_can_draw_it() -> None:
    assert "moe-routing" in drawn_by_the_mock("moe-inference", draws=20)
