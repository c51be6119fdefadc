"""The decode-step battery: its speed, its variants, and how it treats odd submissions."""

from __future__ import annotations

import pytest

from graders.checks import decode_step as check
from graders.reference.decode import prefill_cache, step
from tests.graders.checks.helpers import (
    assert_fails_with,
    assert_solution_passes_cleanly,
    assert_wrong_and_distinct,
    attention_inputs,
    run,
    seen_per_seed,
)

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


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_battery_runs_one_token_steps_on_several_head_counts() -> None:
    code = STEP.format(store=RIGHT_STORE, returned=RIGHT_RETURN).replace(
        "    SEEN.append(float(x.sum()))", "    SEEN.append((tuple(x.shape), n_heads))"
    )
    _, session = run(check, code)
    shapes = session.module.SEEN
    assert {s[0][1] for s in shapes} == {1}
    assert min(s[0][0] for s in shapes) >= 2
    assert len({s[1] for s in shapes}) >= 3


@pytest.mark.parametrize(("B", "T", "d", "h"), check.SEQUENCES)
def test_every_step_variant_is_wrong_and_distinct_once_two_tokens_are_cached(
    B: int, T: int, d: int, h: int
) -> None:
    x, w_qkv, w_o = attention_inputs(B, 3, d)
    past = prefill_cache(x[:, :2], w_qkv, h)
    right = step(x[:, 2:], w_qkv, w_o, h, dict(past))
    variants = check.step_variants(x[:, 2:], past["k"], past["v"], w_qkv, w_o, h)
    assert_wrong_and_distinct(variants, right)


def test_inputs_are_fresh_every_run_and_fixed_by_a_seed() -> None:
    code = STEP.format(store=RIGHT_STORE, returned=RIGHT_RETURN)
    seen_per_seed(check, code)


@pytest.mark.parametrize(
    ("store", "returned", "phrase"),
    [
        (RIGHT_STORE, "None", "should be a tensor, got NoneType"),
        (RIGHT_STORE, "object()", "should be a tensor, got an object of your own"),
        (RIGHT_STORE, "y", "has shape"),
        ("[k], [v]", RIGHT_RETURN, "cache['k'] should be a tensor, got list"),
        ("k.numpy(), v.numpy()", RIGHT_RETURN, "cache['k'] is a NumPy array"),
        ("object(), object()", RIGHT_RETURN, "cache['k'] should be a tensor, got an object of your own"),
        ("k / 2, v", RIGHT_RETURN, "cache['k'] (B, n_heads, t, hd) differs by up to"),
    ],
)
def test_odd_values_fail_with_a_message(store: str, returned: str, phrase: str) -> None:
    assert_fails_with(check, STEP.format(store=store, returned=returned), phrase)


def test_a_step_that_empties_its_cache_fails_the_cache_test() -> None:
    attend = "    y = F.scaled_dot_product_attention(q, k, v)"
    code = STEP.format(store=RIGHT_STORE, returned=RIGHT_RETURN).replace(
        attend, attend + "\n    cache.clear()"
    )
    report, _ = run(check, code)
    assert any("the cache has no 'k' entry" in t.message for t in report.tests), report.tests
