"""The int8-kv-cache battery: speed, fresh inputs, named mistakes, the figures, swaps and probes."""

from __future__ import annotations

import pytest
import torch

from graders.checks import int8_kv_cache as check
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    challenge_dir,
    passed,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)
SOLUTION = (CHALLENGE / "solution.py").read_text()


def test_module_interface_matches_the_challenge() -> None:
    assert_interface_matches(
        check,
        "quantize_kv",
        ("dequantize_kv(q, scale)", "int8_attention(q, k_q, k_scale, v_q, v_scale)", "hd + 4"),
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    q, scale = namespace["quantize_kv"](torch.tensor([[[[0.5, -1.27, 0.25], [0.0, 0.0, 0.0]]]]))  # type: ignore[operator]
    assert q.tolist() == [[[[50, -127, 25], [0, 0, 0]]]] and q.dtype == torch.int8
    assert torch.allclose(scale.flatten(), torch.tensor([0.01, 1.0]))


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text())
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests)


def test_the_verdict_reports_the_attention_error_and_the_bytes_saved() -> None:
    report, _ = run(check, SOLUTION, seed=4)
    figure = next(t for t in report.tests if t.name.startswith("the int8 cache against fp32"))
    assert figure.passed and "of fp32 attention" in figure.message
    assert "68 bytes per position" in figure.message and "46.9% of the fp16 cache saved" in figure.message


SPY = SOLUTION.replace(
    '    """x: float32 (B, H, T, hd)',
    '    SEEN.append(tuple(x.shape) + (float(x.sum()),))\n    """x: float32 (B, H, T, hd)',
)


def test_inputs_are_fresh_on_every_run_and_reproducible_with_a_seed() -> None:
    runs = seen_per_seed(check, "SEEN = []\n" + SPY, seed=7)
    shapes = {s[:4] for s in runs[0]}
    assert len(shapes) >= 2 and any(s[0] > 1 for s in shapes) and any(s[0] == 1 for s in shapes)


@pytest.mark.parametrize(
    "old, new",
    [
        # the two scales swapped in the signature: keys and values differ in magnitude
        (
            "def int8_attention(q, k_q, k_scale, v_q, v_scale):",
            "def int8_attention(q, k_q, v_scale, v_q, k_scale):",
        ),
        # keys and values swapped
        (
            "def int8_attention(q, k_q, k_scale, v_q, v_scale):",
            "def int8_attention(q, v_q, v_scale, k_q, k_scale):",
        ),
        # the scale ignored in dequantize_kv
        (
            "    return q.to(torch.float32) * scale  # the scale",
            "    return q.to(torch.float32) * scale.mean()  # the scale",
        ),
    ],
)
def test_a_swapped_or_ignored_argument_is_caught(old: str, new: str) -> None:
    assert old in SOLUTION
    report, _ = run(check, SOLUTION.replace(old, new), seed=3)
    assert not passed(report)


def test_a_submission_that_recognises_the_rounding_rows_still_fails() -> None:
    """Half-to-even only on rows that look like the probe (exact halves), a per-head scale elsewhere."""
    cheat = SOLUTION.replace(
        "    amax = x.abs().amax(dim=-1, keepdim=True)  # (B, H, T, 1)\n",
        "    amax = x.abs().amax(dim=-1, keepdim=True)\n"
        "    if not bool(((x * 2) == torch.round(x * 2)).all(-1).any()):\n"
        "        amax = x.abs().amax(dim=(-2, -1), keepdim=True).expand_as(amax)\n",
    )
    assert not passed(run(check, cheat, seed=1)[0])


ODD = {
    "quantize_kv returns one tensor": "    return q\n",
    "quantize_kv returns strings": '    return "q", "scale"\n',
    "quantize_kv returns a triple": "    return q, scale, 1\n",
}


@pytest.mark.parametrize("what", list(ODD))
def test_odd_return_values_fail_with_a_message_not_a_crash(what: str) -> None:
    line = "    return q, scale\n"
    assert line in SOLUTION
    assert_fails_with_messages(check, SOLUTION.replace(line, ODD[what]))
