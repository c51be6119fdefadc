"""The decode-step battery: its speed, its variants, and how it treats odd submissions."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
import torch

from graders.checks import decode_step as check
from graders.checks.report import CheckReport, close
from graders.reference.decode import prefill_cache, step
from graders.sandbox.inprocess import InProcessSession

ROOT = Path(__file__).resolve().parents[3]
CHALLENGE = ROOT / "questions" / "challenges" / check.SLUG
CASES = ROOT / "tests" / "graders" / "cases" / check.SLUG

STEP = """
import torch
import torch.nn.functional as F

SEEN = []


def step(x, w_qkv, w_o, n_heads, cache):
    SEEN.append(float(x.sum()))
    B, _, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, -1).transpose(1, 2) for t in (q, k, v))
    if "k" in cache:
        k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
    cache["k"], cache["v"] = {store}
    y = F.scaled_dot_product_attention(q, k, v)
    return {returned}
"""
RIGHT_STORE = "k, v"
RIGHT_RETURN = "y.transpose(1, 2).reshape(B, 1, d) @ w_o"


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


def test_the_battery_runs_one_token_steps_on_several_head_counts() -> None:
    code = STEP.format(store=RIGHT_STORE, returned=RIGHT_RETURN).replace(
        "    SEEN.append(float(x.sum()))", "    SEEN.append((tuple(x.shape), n_heads))"
    )
    _, session = _run(code)
    shapes = session.module.SEEN
    assert {s[0][1] for s in shapes} == {1}
    assert min(s[0][0] for s in shapes) >= 2
    assert len({s[1] for s in shapes}) >= 3


@pytest.mark.parametrize(("B", "T", "d", "h"), check.SEQUENCES)
def test_every_step_variant_is_wrong_and_distinct_once_two_tokens_are_cached(
    B: int, T: int, d: int, h: int
) -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(B, 3, d, generator=gen, dtype=torch.float64)
    w_qkv = torch.randn(d, 3 * d, generator=gen, dtype=torch.float64) / d**0.5
    w_o = torch.randn(d, d, generator=gen, dtype=torch.float64) / d**0.5
    past = prefill_cache(x[:, :2], w_qkv, h)
    right = step(x[:, 2:], w_qkv, w_o, h, dict(past))
    variants = check.step_variants(x[:, 2:], past["k"], past["v"], w_qkv, w_o, h)
    for mistakes, wrong in variants:
        assert not close(wrong, right), mistakes
    for (a, wrong_a), (b, wrong_b) in itertools.combinations(variants, 2):
        assert not close(wrong_a, wrong_b), (a, b)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    code = STEP.format(store=RIGHT_STORE, returned=RIGHT_RETURN)
    seen = []
    for seed in (None, None, 7, 7):
        report, session = _run(code, seed)
        assert all(t.passed for t in report.tests), report.tests
        seen.append(session.module.SEEN)
    assert seen[0] != seen[1]
    assert seen[2] == seen[3]


@pytest.mark.parametrize(
    ("store", "returned", "phrase"),
    [
        (RIGHT_STORE, "None", "should be a tensor, got NoneType"),
        (RIGHT_STORE, "object()", "should be a tensor, got an object of your own"),
        (RIGHT_STORE, "y", "has shape"),
        ("[k], [v]", RIGHT_RETURN, "cache['k'] should be a tensor, got list"),
        ("k.numpy(), v.numpy()", RIGHT_RETURN, "your code raised TypeError"),
        ("object(), object()", RIGHT_RETURN, "cache['k'] should be a tensor, got an object of your own"),
        ("k / 2, v", RIGHT_RETURN, "cache['k'] (B, n_heads, t, hd) differs by up to"),
    ],
)
def test_odd_values_fail_with_a_message(store: str, returned: str, phrase: str) -> None:
    report, _ = _run(STEP.format(store=store, returned=returned))
    assert report.tests and not all(t.passed for t in report.tests)
    assert any(phrase in t.message for t in report.tests), [t.message for t in report.tests]


def test_a_step_that_empties_its_cache_fails_the_cache_test() -> None:
    attend = "    y = F.scaled_dot_product_attention(q, k, v)"
    code = STEP.format(store=RIGHT_STORE, returned=RIGHT_RETURN).replace(
        attend, attend + "\n    cache.clear()"
    )
    report, _ = _run(code)
    assert any("the cache has no 'k' entry" in t.message for t in report.tests), report.tests
