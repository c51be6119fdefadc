"""graders/reference/rope.py: three RoPE formulations agree; cached RoPE attention equals one pass."""

from __future__ import annotations

import math

import pytest
import torch

from graders.reference.attention import project_qkv
from graders.reference.rope import (
    apply_rope,
    apply_rope_complex,
    apply_rope_explicit,
    rope_attention,
    rope_frequencies,
)
from tests.graders.reference.test_decode import assert_close


def _layer(B: int, T: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, d, generator=gen, dtype=torch.float64)
    w_qkv = torch.randn(d, 3 * d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    w_o = torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    return x, w_qkv, w_o


@pytest.mark.parametrize("base", [10000.0, 500.0])
@pytest.mark.parametrize("per_row", [False, True])
def test_vectorised_explicit_and_complex_rope_agree(base: float, per_row: bool) -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 2, 5, 8, generator=gen, dtype=torch.float64)
    positions = torch.randint(0, 60, (3, 5), generator=gen) if per_row else torch.arange(7, 12)
    want = apply_rope_complex(x, positions, base)
    assert_close(apply_rope(x, positions, base), want, "vectorised vs complex")
    assert_close(apply_rope_explicit(x, positions, base), want, "explicit vs complex")


def test_rope_pairs_component_i_with_i_plus_half() -> None:
    x = torch.zeros(1, 1, 1, 4, dtype=torch.float64)
    x[..., 0] = 1.0  # only component 0: it turns into component 2 (its half-split partner)
    out = apply_rope(x, torch.tensor([1]), base=10000.0)
    assert_close(
        out[0, 0, 0], torch.tensor([math.cos(1.0), 0, math.sin(1.0), 0], dtype=torch.float64), "pair"
    )


def test_theta_is_base_to_the_minus_two_i_over_hd() -> None:
    assert_close(
        rope_frequencies(8, 100.0), torch.tensor([100.0 ** (-2 * i / 8) for i in range(4)]).double(), "theta"
    )


def test_scores_depend_only_on_the_distance_between_positions() -> None:
    gen = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 1, 1, 1, 16, generator=gen, dtype=torch.float64).unbind(0)
    a = apply_rope(q, torch.tensor([5])) @ apply_rope(k, torch.tensor([2])).transpose(-2, -1)
    b = apply_rope(q, torch.tensor([40])) @ apply_rope(k, torch.tensor([37])).transpose(-2, -1)
    assert_close(a, b, "q_5.k_2 vs q_40.k_37")


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("chunks", [[9], [4, 5], [3, 1, 1, 4], [1] * 9])
def test_chunked_and_decoded_rope_attention_equal_one_pass(chunks: list[int], fused: bool) -> None:
    x, w_qkv, w_o = _layer(2, sum(chunks), 32)
    full, full_cache = rope_attention(x, w_qkv, w_o, 4, base=300.0)
    cache: dict[str, torch.Tensor] | None = None
    start = 0
    for n in chunks:
        y, cache = rope_attention(x[:, start : start + n], w_qkv, w_o, 4, cache, base=300.0, fused=fused)
        assert_close(y, full[:, start : start + n], f"chunk at {start}")
        start += n
    assert cache is not None
    assert_close(cache["k"], full_cache["k"], "cached keys")
    _, k, v = project_qkv(x, w_qkv, 4)
    assert_close(cache["v"], v, "values are never rotated")
    assert_close(cache["k"], apply_rope(k, torch.arange(9), 300.0), "keys are cached rotated")
