"""graders/reference/attention.py: the explicit and fused paths agree, and both mean causal attention."""

from __future__ import annotations

import math

import pytest
import torch

from graders.reference.attention import (
    attend,
    attend_fused,
    causal_mask,
    causal_self_attention,
    head_size,
    merge_heads,
    project_qkv,
    split_heads,
)

SHAPES = [(2, 7, 32, 4), (3, 12, 64, 8), (2, 16, 48, 3), (3, 1, 32, 2), (1, 5, 16, 1)]


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


def _by_definition(x: torch.Tensor, w_qkv: torch.Tensor, w_o: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Position by position and head by head, straight from the contract's sentence."""
    B, T, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    out = torch.zeros(B, T, d, dtype=x.dtype)
    for h in range(n_heads):
        cols = slice(h * hd, (h + 1) * hd)
        for i in range(T):
            scores = (k[:, : i + 1, cols] @ q[:, i, cols].unsqueeze(-1)).squeeze(-1) / math.sqrt(hd)
            weights = torch.softmax(scores, dim=-1)  # (B, i + 1)
            out[:, i, cols] = (weights.unsqueeze(-1) * v[:, : i + 1, cols]).sum(dim=1)
    return out @ w_o


@pytest.mark.parametrize(("B", "T", "d", "h"), SHAPES)
def test_explicit_and_fused_paths_agree(B: int, T: int, d: int, h: int) -> None:
    x, w_qkv, w_o = _layer(B, T, d)
    explicit = causal_self_attention(x, w_qkv, w_o, h)
    fused = causal_self_attention(x, w_qkv, w_o, h, fused=True)
    assert_close(explicit, fused, f"explicit vs fused, B={B} T={T} d={d} h={h}")


@pytest.mark.parametrize(("B", "T", "d", "h"), SHAPES)
def test_matches_the_definition_position_by_position(B: int, T: int, d: int, h: int) -> None:
    x, w_qkv, w_o = _layer(B, T, d, seed=1)
    x, w_qkv, w_o = x.double(), w_qkv.double(), w_o.double()
    assert_close(causal_self_attention(x, w_qkv, w_o, h), _by_definition(x, w_qkv, w_o, h), "vs definition")


def test_is_causal() -> None:
    x, w_qkv, w_o = _layer(2, 9, 32)
    changed = x.clone()
    changed[:, 6:] = torch.randn(2, 3, 32)
    before = causal_self_attention(x, w_qkv, w_o, 4)
    after = causal_self_attention(changed, w_qkv, w_o, 4)
    assert torch.equal(before[:, :6], after[:, :6])
    assert not torch.allclose(before[:, 6:], after[:, 6:])


def test_causal_mask_is_aligned_bottom_right() -> None:
    assert torch.equal(causal_mask(3, 3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    # Two queries after three cached keys: positions 3 and 4.
    want = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask(2, 5), want)
    assert causal_mask(1, 4).all()  # a decode step sees everything
    with pytest.raises(ValueError, match="T=4 queries cannot follow only S=3 keys"):
        causal_mask(4, 3)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("T", [1, 3])
def test_queries_after_a_prefix_equal_the_last_rows_of_the_full_pass(fused: bool, T: int) -> None:
    x, w_qkv, _ = _layer(2, 8, 32)
    q, k, v = project_qkv(x, w_qkv, 4)
    full = attend(q, k, v)
    path = attend_fused if fused else attend
    assert_close(path(q[:, :, -T:], k, v), full[:, :, -T:], f"last {T} queries over 8 keys, fused={fused}")


def test_split_heads_gives_head_h_columns_h_hd_to_h_plus_1_hd() -> None:
    t = torch.arange(2 * 3 * 12, dtype=torch.float32).view(2, 3, 12)
    heads = split_heads(t, 4)  # (2, 4, 3, 3)
    assert heads.shape == (2, 4, 3, 3)
    assert torch.equal(heads[1, 2, 0], t[1, 0, 6:9])
    assert torch.equal(merge_heads(heads), t)


def test_invariants_name_both_values() -> None:
    with pytest.raises(ValueError, match="d=30 is not a multiple of n_heads=4"):
        head_size(30, 4)
    x = torch.randn(1, 2, 8)
    with pytest.raises(ValueError, match=r"w_qkv has shape \(8, 8\), expected \(8, 24\)"):
        project_qkv(x, torch.randn(8, 8), 2)
