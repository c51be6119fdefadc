"""The one-layer NumPy model: naive and cached generation agree, and the counters match the figures."""

from __future__ import annotations

import numpy as np
import pytest

from app.content.figures import naive_vs_cached_work
from graders.reference.numpy_generation import (
    Work,
    decode_step,
    forward,
    generate_cached,
    generate_naive,
    greedy_margin,
    init_params,
    prefill,
)

V, D = 64, 32


@pytest.fixture
def params() -> dict[str, np.ndarray]:
    return init_params(np.random.default_rng(0), V, D)


def test_work_counters_equal_the_figures_for_a_4_token_prompt_and_60_new(
    params: dict[str, np.ndarray],
) -> None:
    naive, cached = Work(), Work()
    a = generate_naive(params, [5, 9, 2, 41], 60, naive)
    b = generate_cached(params, [5, 9, 2, 41], 60, cached)
    assert a == b
    want = naive_vs_cached_work(4, 60)
    assert (naive.projections, naive.score_elements) == (want["naive_proj"], want["naive_scores"])
    assert (cached.projections, cached.score_elements) == (want["cached_proj"], want["cached_scores"])
    assert (naive.projections, naive.score_elements) == (6030, 85330)  # seed 002
    assert (cached.projections, cached.score_elements) == (192, 2086)


@pytest.mark.parametrize(("prompt_len", "n_new"), [(1, 1), (1, 9), (7, 3), (12, 0)])
def test_counters_follow_the_formula_for_other_lengths(
    params: dict[str, np.ndarray], prompt_len: int, n_new: int
) -> None:
    prompt = list(range(prompt_len))
    naive, cached = Work(), Work()
    generate_naive(params, prompt, n_new, naive)
    generate_cached(params, prompt, n_new, cached)
    want = naive_vs_cached_work(prompt_len, n_new)
    assert [naive.projections, naive.score_elements] == [want["naive_proj"], want["naive_scores"]]
    assert [cached.projections, cached.score_elements] == [want["cached_proj"], want["cached_scores"]]


@pytest.mark.parametrize("seed", range(5))
def test_naive_and_cached_generation_produce_identical_tokens(seed: int) -> None:
    rng = np.random.default_rng(seed)
    params = init_params(rng, 32, 16)
    for prompt in ([int(rng.integers(32))], rng.integers(32, size=6).tolist()):
        assert generate_naive(params, prompt, 25) == generate_cached(params, prompt, 25)


def test_every_decode_step_matches_the_full_forward_row(params: dict[str, np.ndarray]) -> None:
    tokens = [3, 17, 40, 8, 8, 63, 0]
    cache, logits = prefill(params, tokens[:3])
    np.testing.assert_allclose(logits, forward(params, tokens[:3])[-1], rtol=1e-12, atol=1e-12)
    full = forward(params, tokens)
    for t in range(3, len(tokens)):
        logits = decode_step(params, tokens[t], cache)
        assert cache["k"].shape == cache["v"].shape == (t + 1, D)
        np.testing.assert_allclose(logits, full[t], rtol=1e-10, atol=1e-12)


def test_prefill_keeps_keys_and_values_in_float64(params: dict[str, np.ndarray]) -> None:
    cache, logits = prefill(params, [1, 2, 3])
    x = params["E"][[1, 2, 3]]
    np.testing.assert_array_equal(cache["k"], x @ params["W_k"])
    np.testing.assert_array_equal(cache["v"], x @ params["W_v"])
    assert logits.shape == (V,) and logits.dtype == np.float64


def test_decode_reads_the_cache_it_is_given(params: dict[str, np.ndarray]) -> None:
    cache, _ = prefill(params, [4, 5, 6])
    honest = decode_step(params, 7, {"k": cache["k"].copy(), "v": cache["v"].copy()})
    corrupted = decode_step(params, 7, {"k": cache["k"] * 3.0, "v": cache["v"] - 1.0})
    assert not np.allclose(honest, corrupted)


def test_greedy_margin_is_the_smallest_top_two_gap(params: dict[str, np.ndarray]) -> None:
    margin = greedy_margin(params, [5, 9], 4)
    cache, logits = prefill(params, [5, 9])
    gaps = []
    for _ in range(4):
        top = np.sort(logits)
        gaps.append(top[-1] - top[-2])
        logits = decode_step(params, int(np.argmax(logits)), cache)
    assert margin == pytest.approx(min(gaps))
