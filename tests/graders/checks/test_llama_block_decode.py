"""The llama-block-decode battery: the prompt's shapes, the variants, named mistakes, the ValueError."""

from __future__ import annotations

import pytest
import torch

from graders.checks import llama_block_decode as check
from graders.checks import llama_block_decode_variants as variants
from graders.checks.serving_common import Rng
from graders.reference.llama import LlamaDims, llama_block, random_weights
from tests.graders.checks.helpers import (
    assert_every_known_mistake_has_a_golden_case,
    assert_fails_with_messages,
    assert_interface_matches,
    assert_solution_passes_cleanly,
    cases_dir,
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
        "llama_block",
        (
            "llama_block(x, weights, n_heads, n_kv_heads, cache=None, base=10000.0, eps=1e-5)",
            "x / sqrt(mean(x**2, -1) + eps) * w",
            "i // (H // H_kv)",
            "(B, H_kv, S, hd)",
        ),
    )


def test_the_prompt_example_behaves_as_shown() -> None:
    namespace: dict[str, object] = {}
    exec(SOLUTION, namespace)
    layer = namespace["llama_block"]
    weights = random_weights(torch.Generator().manual_seed(0), 12, 4, 2, 4, 20)
    x = torch.randn(1, 6, 12)
    y, cache = layer(x[:, :5], weights, 4, 2)  # type: ignore[operator]
    assert y.shape == (1, 5, 12) and cache["k"].shape == (1, 2, 5, 4)
    y, cache = layer(x[:, 5:], weights, 4, 2, cache)  # type: ignore[operator]
    assert y.shape == (1, 1, 12) and cache["v"].shape == (1, 2, 6, 4)
    with pytest.raises(ValueError):
        layer(x[:, :5], random_weights(torch.Generator().manual_seed(0), 12, 6, 4, 4, 20), 6, 4)  # type: ignore[operator]


def test_every_known_mistake_has_a_golden_case_that_names_it() -> None:
    assert_every_known_mistake_has_a_golden_case(check)


def test_the_solution_passes_cleanly_on_fresh_inputs() -> None:
    assert_solution_passes_cleanly(check)


def test_the_starter_fails_every_test_without_crashing_the_grader_or_being_told_of_mistakes() -> None:
    report, _ = run(check, (CHALLENGE / "starter.py").read_text(), seed=0)
    assert report.tests and not any(t.passed for t in report.tests)
    assert all("NotImplementedError" in t.message for t in report.tests) and not report.diagnosis


def test_a_hugging_face_style_answer_with_sdpa_and_no_repeat_passes() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "hf_style_sdpa.py").read_text(), seed=5)
    assert passed(report), [t.message for t in report.tests if not t.passed]


@pytest.mark.parametrize("seed", range(4))
def test_the_sizes_of_a_run_all_differ_and_rope_pairs_fit(seed: int) -> None:
    rng = Rng(seed)
    for B in (1, 2, 3):
        dims = check.random_dims(rng, B)
        sizes = [B, dims.d, dims.n_heads, dims.n_kv_heads, dims.hd, dims.d // dims.n_heads, dims.f]
        assert len(set(sizes)) == len(sizes) and dims.hd % 2 == 0 and dims.n_heads * dims.hd != dims.d
        assert 1 < dims.n_kv_heads < dims.n_heads and dims.n_heads % dims.n_kv_heads == 0


@pytest.mark.parametrize("T, s_past, eps", [(5, 0, 1e-5), (3, 4, 2e-3), (1, 6, 1e-5)])
def test_every_variant_that_applies_differs_from_the_contract(T: int, s_past: int, eps: float) -> None:
    rng = Rng(11)
    dims = LlamaDims(44, 6, 2, 4, 40)  # d // H = 7, hd = 4
    weights = {k: w.double() for k, w in check.weights_for(rng, dims).items()}
    scale = check.SMALL_SCALE if eps != 1e-5 else 1.0
    x = check.tokens(rng, 2, s_past + T, dims.d, scale).double()
    full = llama_block(x[:, :s_past], weights, 6, 2, None, 500.0, eps)[1] if s_past else None
    right, _ = llama_block(x[:, s_past:], weights, 6, 2, full, 500.0, eps)
    outs = variants.layer_variants(x[:, s_past:], weights, 6, 2, full, 500.0, eps)
    invisible = {variants.CACHE_UNROTATED} if s_past == 0 else set()  # the contract's y, another cache
    for mistake, out in outs.items():
        if mistake == variants.EPS_OUTSIDE_ROOT and eps == 1e-5:
            continue  # at unit activations it moves the norm by about eps / 2: at the tolerance's edge
        differs = not torch.allclose(out.y, right, rtol=1e-4, atol=1e-5)
        assert differs != (mistake in invisible), mistake
    assert (variants.EPS_IGNORED in outs) == (eps != 1e-5)
    if s_past == 0:
        assert variants.MASK_NOT_OFFSET not in outs and variants.POSITIONS_RESTART not in outs
    if T == 1:
        assert variants.NO_MASK not in outs


@pytest.mark.parametrize(
    "case, mistake",
    [
        ("eps_outside_root", variants.EPS_OUTSIDE_ROOT),
        ("gqa_modulo", variants.GQA_MODULO),
        ("cache_after_repeat", variants.CACHE_AFTER_REPEAT),
        ("post_norm", variants.POST_NORM),
    ],
)
def test_a_mistake_is_named_in_the_diagnosis_and_in_the_failed_tests_message(case: str, mistake: str) -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / f"{case}.py").read_text(), seed=2)
    assert report.diagnosis[:1] == [mistake]
    assert any(mistake in t.message for t in report.tests if not t.passed)


@pytest.mark.parametrize("seed", range(3))
def test_eps_outside_the_root_fails_where_activations_are_small(seed: int) -> None:
    """At unit activations it moves a token's norm by eps / sqrt(mean(x**2)) - eps / (2 mean(x**2)),
    near the tolerance (some seeds see it); at about 0.05 per component it is far above it."""
    report, _ = run(check, (cases_dir(check.SLUG) / "eps_outside_root.py").read_text(), seed=seed)
    small = report.tests[3]
    assert small.name.startswith("small activations") and not small.passed
    assert variants.EPS_OUTSIDE_ROOT in small.message and report.tests[-1].passed


def test_a_missing_value_error_says_what_was_raised_instead() -> None:
    report, _ = run(check, (cases_dir(check.SLUG) / "no_value_error.py").read_text(), seed=0)
    assert all(t.passed for t in report.tests[:-1]) and not report.tests[-1].passed
    assert "expected ValueError" in report.tests[-1].message and report.diagnosis == [variants.NO_VALUE_ERROR]


def test_a_cache_with_other_keys_is_refused_in_words() -> None:
    code = SOLUTION.replace('return h + mlp, {"k": k, "v": v}', 'return h + mlp, {"keys": k, "v": v}')
    assert code != SOLUTION
    report, _ = run(check, code, seed=1)
    assert (
        not passed(report)
        and "cache has no 'k' entry: return {'k': keys, 'v': values}" in report.tests[0].message
    )


SIGNATURE = "def llama_block(x, weights, n_heads, n_kv_heads, cache=None, base=10000.0, eps=1e-5):"


@pytest.mark.parametrize("body", ["return x", "return x, None", "return x, {'k': 1, 'v': 2}"])
def test_odd_answers_fail_with_a_message(body: str) -> None:
    assert_fails_with_messages(check, f"{SIGNATURE}\n    {body}\n")


def test_each_run_draws_fresh_inputs_unless_seeded() -> None:
    code = SOLUTION.replace(SIGNATURE, f"SEEN = []\n\n\n{SIGNATURE}\n    SEEN.append(x.sum().item())")
    a, b, c, d = seen_per_seed(check, code)
    assert a != b and c == d
