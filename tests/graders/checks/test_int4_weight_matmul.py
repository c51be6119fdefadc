"""The int4-weight-matmul battery: the prompt's example, the probes, named mistakes, the footprint rule."""

from __future__ import annotations

import pytest
import torch

from graders.checks import int4_weight_matmul as check
from graders.checks import int4_weight_matmul_mistakes as mistakes
from graders.checks.int4_weight_matmul_inputs import (
    expected_product,
    halves_group,
    probe_weight,
    random_format,
)
from graders.checks.serving_common import Rng
from graders.reference.int4 import dequantize_int4, quantize_int4
from graders.sandbox import outside
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    cases_dir,
    challenge_dir,
    drawn_by_the_mock,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "quantize_int4",
        ("w4a16_matmul(x, packed, scales, zeros, group_size)", "max(M * N, N * group_size)"),
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    w = torch.tensor([[-1.0, 0.5, 2.0, 3.5], [0.0, 1.5, 2.5, 15.0]])
    packed, scales, zeros = namespace["quantize_int4"](w, 4)  # type: ignore[operator]
    assert packed.tolist() == [[80, 250], [32, 242]] and zeros.tolist() == [[3], [0]]
    assert zeros.dtype == torch.uint8 and torch.allclose(scales, torch.tensor([[0.3], [1.0]]))
    back = namespace["dequantize_int4"](packed, scales, zeros, 4)  # type: ignore[operator]
    assert torch.allclose(back, torch.tensor([[-0.9, 0.6, 2.1, 3.6], [0.0, 2.0, 2.0, 15.0]]))
    y = namespace["w4a16_matmul"](torch.ones(1, 4), packed, scales, zeros, 4)  # type: ignore[operator]
    assert torch.allclose(y, torch.tensor([[5.4, 19.0]]))


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader_or_being_told_of_mistakes() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests) and not report.diagnosis


@pytest.mark.parametrize("seed", range(5))
def test_the_halves_group_makes_every_rounding_rule_differ(seed: int) -> None:
    rng = Rng(seed)
    group = halves_group(rng, 8)
    w = group[None, :]
    scale = (w.max() - w.min()) / 15
    assert float(scale) * 15 == float(w.max() - w.min()) and torch.equal(
        w / scale, torch.round(w / scale * 2) / 2
    )
    right = quantize_int4(w, 8)
    for mistake in (mistakes.HALF_UP, mistakes.HALF_AWAY):
        assert not torch.equal(mistakes.quantize_variant(w, 8, mistake)[0], right[0]), mistake


@pytest.mark.parametrize("seed", range(5))
def test_every_quantize_variant_differs_from_the_contract_on_the_probe_weight(seed: int) -> None:
    rng = Rng(seed)
    w, _ = probe_weight(rng, 6, 64, 16)
    packed, scales, zeros = quantize_int4(w, 16)
    for mistake in mistakes.QUANTIZE_MISTAKES:
        p, s, z = mistakes.quantize_variant(w, 16, mistake)
        assert not (torch.equal(p, packed) and torch.equal(s, scales) and torch.equal(z, zeros.long())), (
            mistake
        )
    fmt = random_format(rng, 5, 24, 8)
    right = dequantize_int4(*fmt, 8)
    assert len(mistakes.dequantize_variants(*fmt, 8)) == len(mistakes.DEQUANTIZE_MISTAKES)
    assert all(not torch.allclose(wrong, right) for _, wrong in mistakes.dequantize_variants(*fmt, 8))


def test_a_big_format_repeats_one_block_so_the_expected_product_is_exact() -> None:
    rng = Rng(3)
    fmt = random_format(rng, 512, 64, 16)
    x = torch.randn(2, 64)
    assert torch.allclose(expected_product(x, fmt, 16), x @ dequantize_int4(*fmt, 16).T, rtol=1e-4, atol=1e-4)


def test_the_big_weight_is_several_times_the_slack_and_its_dequantization_over_the_budget() -> None:
    M, N, K, gs = check.BIG
    full = 4 * N * K
    assert full >= 4 * outside.SLACK_BYTES
    # A full dequantization holds the float weight and the codes it came from at once, at least;
    # the worked solution took 13.7 MiB of the 36.4 MiB budget in the sandbox (2026-12-02).
    assert full + N * K > check.resident_budget(M, N, K, gs) > 2 * (N * K // 2 + (1 << 20))


def test_the_verdict_reports_multiply_adds_and_the_largest_tensor_against_the_reference() -> None:
    report, _ = run(check, SOLUTION, seed=3)
    cost = report.tests[-1]
    M, N, K, gs = check.COST
    assert cost.passed and f"did {M * N * K:,} multiply-adds in its matrix products (1.00x)" in cost.message
    assert (
        f"largest floating-point tensor held {N * gs // 2:,} numbers, the reference's {N * gs:,}"
        in cost.message
    )


def test_dequantizing_the_whole_weight_fails_with_the_size_it_built_in_words() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "full_dequant.py").read_text(), seed=4)
    M, N, K, gs = check.COST
    cost = report.tests[-1]
    assert not cost.passed and mistakes.FULL_DEQUANT in report.diagnosis
    assert f"made held {N * K:,} numbers" in cost.message and f"= {N * gs:,}" in cost.message
    assert all(t.passed for t in report.tests[:5])  # quantize and dequantize are right


def test_a_group_at_a_time_passes_but_four_groups_at_once_are_bigger_than_allowed() -> None:
    four = SOLUTION.replace(
        "half = group_size // 2  #", "group_size, half = 4 * group_size, 2 * group_size  #"
    )
    assert four != SOLUTION
    report, _ = run(check, four, seed=2)
    assert any(mistakes.BIGGER_THAN_ALLOWED in t.message for t in report.tests if not t.passed)


def test_each_run_draws_fresh_inputs_unless_seeded() -> None:
    code = SOLUTION.replace(
        "def quantize_int4(w, group_size):",
        "SEEN = []\n\n\ndef quantize_int4(w, group_size):\n    SEEN.append(w.sum().item())",
    )
    a, b, c, d = seen_per_seed(check, code)
    assert a != b and c == d


def test_the_mock_interview_can_draw_it() -> None:
    assert "int4-weight-matmul" in drawn_by_the_mock("quantization")
