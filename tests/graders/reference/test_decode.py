"""graders/reference/decode.py: cached decoding equals the full forward pass, token for token."""

from __future__ import annotations

import math

import pytest
import torch

from graders.reference.attention import causal_self_attention
from graders.reference.decode import decode_sequence, prefill_cache, step

SHAPES = [(2, 6, 32, 4), (3, 5, 48, 3), (2, 4, 64, 8), (2, 5, 16, 1)]


def _layer(B: int, T: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, d, generator=gen)
    w_qkv = torch.randn(d, 3 * d, generator=gen) / math.sqrt(d)
    w_o = torch.randn(d, d, generator=gen) / math.sqrt(d)
    return x, w_qkv, w_o


def assert_close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    diff = (got - want).abs()
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), (
        f"{what}: max difference {diff.max().item():.3g}, mean {diff.mean().item():.3g}"
    )


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize(("B", "T", "d", "h"), SHAPES)
def test_cached_decoding_matches_the_full_pass_token_for_token(
    B: int, T: int, d: int, h: int, fused: bool
) -> None:
    x, w_qkv, w_o = _layer(B, T, d)
    full = causal_self_attention(x, w_qkv, w_o, h)
    cache: dict[str, torch.Tensor] = {}
    for t in range(T):
        y = step(x[:, t : t + 1], w_qkv, w_o, h, cache, fused=fused)
        assert_close(y, full[:, t : t + 1], f"step {t + 1}, fused={fused}")
        assert cache["k"].shape == cache["v"].shape == (B, h, t + 1, d // h)


def test_the_cache_holds_the_raw_per_head_projections() -> None:
    x, w_qkv, w_o = _layer(2, 5, 32)
    _, cache = decode_sequence(x, w_qkv, w_o, 4)
    want = prefill_cache(x, w_qkv, 4)
    assert_close(cache["k"], want["k"], "k")
    assert_close(cache["v"], want["v"], "v")


def test_explicit_and_fused_steps_agree() -> None:
    x, w_qkv, w_o = _layer(3, 7, 48)
    explicit, _ = decode_sequence(x, w_qkv, w_o, 3)
    fused, _ = decode_sequence(x, w_qkv, w_o, 3, fused=True)
    assert_close(explicit, fused, "explicit vs fused decoding")


def test_a_step_continues_a_cache_built_elsewhere_and_leaves_other_keys_alone() -> None:
    x, w_qkv, w_o = _layer(2, 6, 32)
    cache = {**prefill_cache(x[:, :5], w_qkv, 4), "note": "built by the grader"}
    y = step(x[:, 5:], w_qkv, w_o, 4, cache)
    assert_close(y, causal_self_attention(x, w_qkv, w_o, 4)[:, 5:], "step 6 on a prefilled cache")
    assert cache["k"].shape == (2, 4, 6, 8)
    assert cache["note"] == "built by the grader"


def test_a_step_takes_one_token() -> None:
    x, w_qkv, w_o = _layer(2, 3, 32)
    with pytest.raises(ValueError, match="a decode step takes T=1 token, got T=3"):
        step(x, w_qkv, w_o, 4, {})
