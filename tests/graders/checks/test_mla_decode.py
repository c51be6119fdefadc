"""The mla-decode battery: the prompt's shapes, the variants, named mistakes, the absorption rule."""

from __future__ import annotations

import pytest
import torch

from graders.checks import mla_decode as check
from graders.checks import mla_decode_long as long_cache
from graders.checks import mla_decode_rule as rule
from graders.checks import mla_decode_variants as variants
from graders.checks.mla_decode_calls import weights_for
from graders.checks.serving_common import Rng
from graders.reference.mla import MLADims, mla_attention, random_weights
from graders.sandbox import outside
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
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
        check,
        "mla_attention",
        (
            "mla_attention(x, weights, n_heads, cache=None, base=10000.0)",
            "B * H * S * min(d_nope, d_v)",
            "sqrt(d_nope + d_rope)",
        ),
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    weights = random_weights(torch.Generator().manual_seed(0), 8, 2, 4, 2, 3, 5)
    assert [tuple(w.shape) for w in weights.values()] == [
        (8, 12),
        (8, 3),
        (8, 2),
        (2, 3, 4),
        (2, 3, 5),
        (10, 8),
    ]
    x = torch.randn(1, 7, 8)
    y, cache = namespace["mla_attention"](x[:, :6], weights, 2)  # type: ignore[operator]
    assert y.shape == (1, 6, 8) and cache["c"].shape == (1, 6, 3) and cache["k_rope"].shape == (1, 6, 2)
    y, cache = namespace["mla_attention"](x[:, 6:], weights, 2, cache)  # type: ignore[operator]
    assert y.shape == (1, 1, 8) and cache["c"].shape == (1, 7, 3)


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader_or_being_told_of_mistakes() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text(), seed=0)
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests) and not report.diagnosis


def test_a_right_answer_that_rebuilds_keys_only_for_prompts_passes() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "rebuilds_at_prefill.py").read_text(), seed=5)
    assert passed(report), [t.message for t in report.tests if not t.passed]


@pytest.mark.parametrize("seed", range(3))
def test_the_sizes_of_a_run_all_differ_and_rope_pairs_fit(seed: int) -> None:
    rng = Rng(seed)
    for B in (1, 2, 3):
        dims = check.random_dims(rng, B)
        sizes = [B, dims.d, dims.n_heads, dims.d_nope, dims.d_rope, dims.d_c, dims.d_v]
        assert len(set(sizes)) == len(sizes) and dims.d_rope % 2 == 0 and dims.d_c % 2 == 0


@pytest.mark.parametrize("T, s_past", [(5, 0), (3, 4), (1, 6)])
def test_every_variant_that_applies_differs_from_the_contract_and_from_the_others(
    T: int, s_past: int
) -> None:
    rng = Rng(11)
    dims = MLADims(30, 3, 8, 6, 14, 7)
    weights = {k: w.double() for k, w in weights_for(rng, dims).items()}
    x = rng.randn(2, s_past + T, dims.d).double()
    _, full = mla_attention(x[:, :s_past], weights, 3, None, 500.0) if s_past else (None, None)
    right, _ = mla_attention(x[:, s_past:], weights, 3, full, 500.0)
    outs = variants.layer_variants(x[:, s_past:], weights, 3, full, 500.0)
    assert outs
    for mistake, out in outs.items():
        if mistake != variants.CACHE_UNROTATED:  # same y as the contract at s_past = 0 (its cache differs)
            assert not torch.allclose(out.y, right, rtol=1e-4, atol=1e-5), mistake
    if s_past == 0:
        assert torch.allclose(outs[variants.CACHE_UNROTATED].y, right)
        assert variants.MASK_NOT_OFFSET not in outs and variants.POSITIONS_RESTART not in outs
    if T == 1:
        assert variants.NO_MASK not in outs and variants.MERGE_NO_TRANSPOSE not in outs


def test_the_long_cache_is_many_times_the_slack_and_rebuilt_keys_far_over_the_budget() -> None:
    B, S, dims = long_cache.long_dims(long_cache.LONG)
    keys = 4 * B * dims.n_heads * S * dims.d_nope
    values = 4 * B * dims.n_heads * S * dims.d_v
    assert min(keys, values) >= 4 * outside.SLACK_BYTES
    io = 2 * B * S * (dims.d_c + dims.d_rope) + sum(w.numel() for w in weights_for(Rng(0), dims).values())
    budget = rule.resident_budget(dims, B, S, io)
    # Measured in the sandbox (2026-12-03, loaded machine, H = 16 of d_nope 160, d_c = 20, the weights
    # sent once): the worked solution took 2.2-4.0 MiB of a 13.6 MiB budget per decode call, per-head
    # keys and values 115 MiB.
    assert values > 1.5 * budget and rule.rule_applies(dims, B, S)
    assert len({B, S, dims.d, dims.n_heads, dims.d_nope, dims.d_rope, dims.d_c, dims.d_v}) == 8


def test_the_rule_does_not_apply_where_per_head_tensors_are_no_bigger_than_the_weights() -> None:
    assert not rule.rule_applies(MLADims(30, 3, 8, 6, 14, 7), 2, 2000)  # H x d_v = 21: near d_c = 14
    dims = MLADims(30, 8, 8, 6, 14, 7)  # H x d_v = 56 = 4 x d_c, as DeepSeek-V3's 128 x 128 = 32 x 512
    assert not rule.rule_applies(dims, 2, 20) and rule.rule_applies(dims, 2, 2000)


def test_rebuilding_keys_at_decode_fails_with_the_size_it_built_in_words() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "per_head_keys.py").read_text(), seed=4)
    B, S, dims = long_cache.long_dims(long_cache.COST)
    cost = report.tests[-1]
    assert not cost.passed and any(line.startswith(variants.PER_HEAD_KEYS) for line in report.diagnosis)
    assert f"made held {B * dims.n_heads * S * dims.d_nope:,} numbers" in cost.message
    assert all(t.passed for t in report.tests[:4])  # every number is right: only the size is wrong


def test_rebuilding_only_the_values_is_named_as_values() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "per_head_values.py").read_text(), seed=4)
    assert any(line.startswith(variants.PER_HEAD_VALUES) for line in report.diagnosis)
    assert not any(line.startswith(variants.PER_HEAD_KEYS) for line in report.diagnosis)


def test_the_verdict_reports_multiply_adds_and_the_largest_tensor_against_the_reference() -> None:
    report, _ = run(check, SOLUTION, seed=3)
    cost = report.tests[-1]
    B, S, dims = long_cache.long_dims(long_cache.COST)
    assert cost.passed and "multiply-adds in its matrix products (1.00x)" in cost.message
    assert f"largest floating-point tensor held {B * S * dims.d_c:,} numbers" in cost.message


def test_a_cache_with_other_keys_is_refused_in_words() -> None:
    code = SOLUTION.replace(
        'return y, {"c": c, "k_rope": k_rope}', 'return y, {"latent": c, "k_rope": k_rope}'
    )
    assert code != SOLUTION
    report, _ = run(check, code, seed=1)
    assert (
        not passed(report)
        and "cache has no 'c' entry (it holds 'latent', 'k_rope')" in report.tests[0].message
    )


@pytest.mark.parametrize(
    "code",
    [
        "def mla_attention(x, weights, n_heads, cache=None, base=10000.0):\n    return x\n",
        "def mla_attention(x, weights, n_heads, cache=None, base=10000.0):\n    return x, None\n",
        "def mla_attention(x, weights, n_heads, cache=None, base=10000.0):\n"
        "    return x, {'c': 1, 'k_rope': 2}\n",
    ],
)
def test_odd_answers_fail_with_a_message(code: str) -> None:
    assert_fails_with_messages(check, code)


def test_each_run_draws_fresh_inputs_unless_seeded() -> None:
    code = SOLUTION.replace(
        "def mla_attention(x, weights, n_heads, cache=None, base=10000.0):",
        "SEEN = []\n\n\ndef mla_attention(x, weights, n_heads, cache=None, base=10000.0):\n"
        "    SEEN.append(x.sum().item())",
    )
    a, b, c, d = seen_per_seed(check, code)
    assert a != b and c == d


def test_the_mock_interview_can_draw_it() -> None:
    assert "mla-decode" in drawn_by_the_mock("mla")
