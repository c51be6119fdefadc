"""graders/reference/gqa.py: GQA against plain attention, its cached paths against its full pass."""

from __future__ import annotations

import itertools

import pytest
import torch

from graders.reference.attention import causal_self_attention
from graders.reference.gqa import GQA, repeat_kv

# (B, d, n_q, n_kv): GQA, GQA, MHA, MQA
CONFIGS = [(2, 64, 8, 2), (3, 48, 6, 3), (2, 32, 4, 4), (2, 32, 4, 1)]


def assert_close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    diff = (got - want).abs()
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), (
        f"{what}: max difference {diff.max().item():.3g}, mean {diff.mean().item():.3g}"
    )


def _module(d: int, n_q: int, n_kv: int, seed: int = 0) -> GQA:
    torch.manual_seed(seed)
    return GQA(d, n_q, n_kv).double()


def _x(B: int, T: int, d: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(B, T, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize(("B", "d", "n_q", "n_kv"), CONFIGS)
@pytest.mark.parametrize("chunks", [(9,), (3, 4, 2), (4, 1, 1, 1, 1, 1), (1,) * 9])
@pytest.mark.parametrize("fused", [False, True])
@torch.no_grad()
def test_chunked_and_token_by_token_match_the_full_pass(
    B: int, d: int, n_q: int, n_kv: int, chunks: tuple[int, ...], fused: bool
) -> None:
    m = _module(d, n_q, n_kv)
    x = _x(B, sum(chunks), d)
    full, (k_full, v_full) = m(x)
    cache = None
    for end, size in zip(itertools.accumulate(chunks), chunks, strict=True):
        y, cache = m(x[:, end - size : end], cache, fused=fused)
        assert_close(y, full[:, end - size : end], f"positions {end - size}..{end - 1}, fused={fused}")
        assert cache[0].shape == (B, n_kv, end, d // n_q)  # n_kv heads: cached before the repeat
    assert cache is not None
    assert_close(cache[0], k_full, "k")
    assert_close(cache[1], v_full, "v")


@torch.no_grad()
def test_mha_is_causal_self_attention_with_the_weights_rearranged() -> None:
    m = _module(32, 4, 4)
    x = _x(2, 7, 32)
    w_k, w_v = m.kv.weight.split(32, dim=0)  # keys first, then values
    w_qkv = torch.cat([m.q.weight.T, w_k.T, w_v.T], dim=1)  # (d, 3d)
    assert_close(m(x)[0], causal_self_attention(x, w_qkv, m.o.weight.T, 4), "MHA vs causal_self_attention")


@pytest.mark.parametrize(("d", "n_q", "n_kv"), [(64, 8, 2), (48, 6, 3), (32, 4, 1)])
@torch.no_grad()
def test_query_head_i_reads_kv_head_i_over_group(d: int, n_q: int, n_kv: int) -> None:
    """GQA equals MHA whose kv heads are copies: query head i gets kv head i // (n_q // n_kv)."""
    gqa, mha = _module(d, n_q, n_kv), _module(d, n_q, n_q)
    hd, group = d // n_q, n_q // n_kv
    mha.q.weight.copy_(gqa.q.weight)
    mha.o.weight.copy_(gqa.o.weight)
    kv = gqa.kv.weight.view(2, n_kv, hd, d)  # (k or v, kv head, hd, d)
    mha.kv.weight.copy_(kv.repeat_interleave(group, dim=1).reshape(2 * n_q * hd, d))
    x = _x(2, 6, d)
    assert_close(gqa(x)[0], mha(x)[0], "GQA vs MHA with copied kv heads")


def test_repeat_kv_states_and_does_its_shape_change() -> None:
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).view(2, 3, 4, 5)  # (B, n_kv, S, hd)
    out = repeat_kv(x, 2)
    assert out.shape == (2, 6, 4, 5)
    for head in range(6):
        assert torch.equal(out[:, head], x[:, head // 2])
    assert repeat_kv(x, 1) is x


def test_invariants_name_both_values() -> None:
    with pytest.raises(ValueError, match="n_q=6 is not a multiple of n_kv=4"):
        GQA(48, 6, 4)
    with pytest.raises(ValueError, match="d=30 is not a multiple of n_q=4"):
        GQA(30, 4, 2)
