"""The fix-causal-attention battery: its speed, its variants, and how it treats odd submissions."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

import pytest
import torch

from graders.checks import fix_causal_attention as check
from graders.checks.attention_common import MASK_AFTER_SOFTMAX, MERGE_NO_TRANSPOSE, SCALE_SQRT_D
from graders.checks.report import CheckReport, close
from graders.reference.attention import causal_self_attention
from graders.sandbox.inprocess import InProcessSession

ROOT = Path(__file__).resolve().parents[3]
CHALLENGE = ROOT / "questions" / "challenges" / check.SLUG
CASES = ROOT / "tests" / "graders" / "cases" / check.SLUG

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


def _run(code: str, seed: int | None = None) -> tuple[CheckReport, InProcessSession]:
    session = InProcessSession(code)
    return check.run(session, seed=seed), session


@pytest.mark.parametrize("name", ["starter", "solution"])
def test_golden_cases_mirror_the_challenge_files(name: str) -> None:
    challenge = (CHALLENGE / f"{name}.py").read_text()
    case = (CASES / f"{name}.py").read_text()
    assert case.endswith(challenge), f"tests/graders/cases/{check.SLUG}/{name}.py drifted from the challenge"
    assert all(line.startswith("#") for line in case[: -len(challenge)].splitlines())


def test_the_solution_passes_well_within_the_time_budget() -> None:
    code = (CHALLENGE / "solution.py").read_text()
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        report, _ = _run(code)
        timings.append(time.perf_counter() - start)
        assert report.tests and all(t.passed for t in report.tests), report.tests
    assert min(timings) < 0.15, f"battery took {min(timings) * 1000:.0f} ms"


def test_the_starter_is_diagnosed_with_exactly_the_three_planted_bugs() -> None:
    report, _ = _run((CHALLENGE / "starter.py").read_text(), seed=0)
    assert set(report.diagnosis) == {MASK_AFTER_SOFTMAX, SCALE_SQRT_D, MERGE_NO_TRANSPOSE}
    assert not all(t.passed for t in report.tests)


def test_test_names_carry_their_shapes() -> None:
    report, _ = _run((CHALLENGE / "solution.py").read_text())
    for result in report.tests:
        assert re.search(r"B=\d+ T=\d+ d=\d+ h=\d+$", result.name), result.name


@pytest.mark.parametrize(("B", "T", "d", "h"), [s for s in check.SHAPES if s[1] > 1])
def test_every_variant_is_wrong_and_distinguishable_on_the_battery_shapes(
    B: int, T: int, d: int, h: int
) -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, d, generator=gen, dtype=torch.float64)
    w_qkv = torch.randn(d, 3 * d, generator=gen, dtype=torch.float64) / d**0.5
    w_o = torch.randn(d, d, generator=gen, dtype=torch.float64) / d**0.5
    right = causal_self_attention(x, w_qkv, w_o, h)
    variants = check.known_variants(x, w_qkv, w_o, h)
    for mistakes, wrong in variants:
        assert not close(wrong, right), mistakes
    for (a, wrong_a), (b, wrong_b) in itertools.combinations(variants, 2):
        assert not close(wrong_a, wrong_b), (a, b)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    code = "SEEN = []\n" + SDPA_BODY.format(extra="SEEN.append(float(x.sum()))")
    seen = []
    for seed in (None, None, 7, 7):
        report, session = _run(code, seed)
        assert all(t.passed for t in report.tests)
        seen.append(session.module.SEEN)
    assert seen[0] != seen[1]
    assert seen[2] == seen[3]


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
    report, _ = _run(code)
    assert report.tests and not all(t.passed for t in report.tests)
    assert any(phrase in t.message for t in report.tests), [t.message for t in report.tests]
