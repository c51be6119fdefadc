"""graders/reference/tiled.py: the blocked online softmax equals the explicit and fused paths."""

from __future__ import annotations

import pytest
import torch

from graders.reference.tiled import (
    attention_fused,
    attention_with_lse,
    merge_attention,
    tiled_attention_with_lse,
)
from tests.graders.reference.test_decode import assert_close


def _qkv(B: int, H: int, Tq: int, Tk: int, hd: int, scale: float = 1.0, seed: int = 0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, Tq, hd, generator=gen, dtype=torch.float64) * scale
    k = torch.randn(B, H, Tk, hd, generator=gen, dtype=torch.float64) * scale
    v = torch.randn(B, H, Tk, hd, generator=gen, dtype=torch.float64)
    return [q, k, v]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("Tq", "Tk", "block"), [(7, 7, 3), (3, 10, 4), (1, 9, 2), (5, 12, 12), (4, 6, 100)])
def test_tiled_equals_explicit_and_fused(Tq: int, Tk: int, block: int, causal: bool) -> None:
    q, k, v = _qkv(2, 3, Tq, Tk, 8)
    want, want_lse = attention_with_lse(q, k, v, causal)
    got, lse = tiled_attention_with_lse(q, k, v, block, causal)
    assert_close(got, want, "tiled vs explicit")
    assert_close(lse, want_lse, "lse")
    assert_close(attention_fused(q, k, v, causal), want, "fused vs explicit")


def test_huge_scores_do_not_overflow() -> None:
    q, k, v = (t.float() for t in _qkv(1, 2, 6, 20, 4, scale=12.0))
    got, _ = tiled_attention_with_lse(q, k, v, 3, causal=True)
    want, _ = attention_with_lse(q.double(), k.double(), v.double(), causal=True)
    assert torch.isfinite(got).all()
    assert_close(got.double(), want, "huge scores")


def test_merging_two_halves_of_the_keys_equals_the_whole_and_an_empty_part_adds_nothing() -> None:
    q, k, v = _qkv(2, 2, 4, 10, 8)
    o1, l1 = attention_with_lse(q, k[..., :6, :], v[..., :6, :])
    o2, l2 = attention_with_lse(q, k[..., 6:, :], v[..., 6:, :])
    want, want_lse = attention_with_lse(q, k, v)
    o, lse = merge_attention(o1, l1, o2, l2)
    assert_close(o, want, "merged")
    assert_close(lse, want_lse, "merged lse")
    empty = torch.full_like(l1, float("-inf"))
    o, lse = merge_attention(torch.zeros_like(o1), empty, o1, l1)
    assert_close(o, o1, "empty part")
    o, lse = merge_attention(torch.zeros_like(o1), empty, torch.zeros_like(o1), empty)
    assert torch.equal(o, torch.zeros_like(o1)) and torch.isneginf(lse).all()
