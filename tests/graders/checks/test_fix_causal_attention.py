"""The fix-causal-attention battery: its speed, its variants, and how it treats odd submissions."""

from __future__ import annotations

import re

import pytest

from graders.checks import fix_causal_attention as check
from graders.checks.attention_common import MASK_AFTER_SOFTMAX, MERGE_NO_TRANSPOSE, SCALE_SQRT_D
from graders.reference.attention import causal_self_attention
from tests.graders.checks.helpers import (
    assert_fails_with,
    assert_solution_passes_cleanly,
    assert_wrong_and_distinct,
    attention_inputs,
    challenge_dir,
    run,
    seen_per_seed,
)

CHALLENGE = challenge_dir(check.SLUG)

SDPA_BODY = """
import torch.nn.functional as F


def causal_self_attention(x, w_qkv, w_o, n_heads):
    {extra}
    B, T, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, T, n_heads, d // n_heads).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(B, T, d) @ w_o
"""


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_is_diagnosed_with_exactly_the_three_planted_bugs() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text(), seed=0)
    assert set(report.diagnosis) == {MASK_AFTER_SOFTMAX, SCALE_SQRT_D, MERGE_NO_TRANSPOSE}
    assert not all(t.passed for t in report.tests)


def test_test_names_carry_their_shapes() -> None:
    report, _ = run(check, (CHALLENGE / "solution.py").read_text())
    for result in report.tests:
        assert re.search(r"B=\d+ T=\d+ d=\d+ h=\d+$", result.name), result.name


@pytest.mark.parametrize(("B", "T", "d", "h"), [s for s in check.SHAPES if s[1] > 1])
def test_every_variant_is_wrong_and_distinguishable_on_the_battery_shapes(
    B: int, T: int, d: int, h: int
) -> None:
    x, w_qkv, w_o = attention_inputs(B, T, d)
    right = causal_self_attention(x, w_qkv, w_o, h)
    variants = check.known_variants(x, w_qkv, w_o, h)
    assert_wrong_and_distinct(variants, right)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    code = "SEEN = []\n" + SDPA_BODY.format(extra="SEEN.append(float(x.sum()))")
    seen_per_seed(check, code)


@pytest.mark.parametrize(
    ("returned", "phrase"),
    [
        ("None", "should be a tensor, got NoneType"),
        ("'attention'", "should be a tensor, got str"),
        ("object()", "should be a tensor, got an object of your own"),
        ("torch.zeros(())", "has shape ()"),
        ("torch.zeros(x.shape, dtype=torch.bool)", "expected a float tensor"),
        ("x.numpy() * 0", "differs by up to"),
        ("x * float('nan')", "contains NaN or inf"),
    ],
)
def test_odd_return_values_fail_every_test_with_a_message(returned: str, phrase: str) -> None:
    code = f"import torch\n\n\ndef causal_self_attention(x, w_qkv, w_o, n_heads):\n    return {returned}\n"
    assert_fails_with(check, code, phrase)
