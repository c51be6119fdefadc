"""graders/reference/tensor_parallel.py: the explicit and the vectorised shards and partials agree, and
the all-reduced partials are causal_self_attention's output."""

from __future__ import annotations

import pytest
import torch

from graders.reference.attention import causal_self_attention
from graders.reference.tensor_parallel import (
    all_reduce,
    attention_on_rank,
    attention_on_rank_explicit,
    shard_attention,
    shard_attention_explicit,
    tensor_parallel_attention,
)


def _weights(seed: int, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 7, d, generator=gen, dtype=torch.float64)
    return (
        x,
        torch.randn(d, 3 * d, generator=gen, dtype=torch.float64),
        torch.randn(d, d, generator=gen, dtype=torch.float64),
    )


@pytest.mark.parametrize(
    "d, n_heads, world_size", [(12, 4, 1), (12, 4, 2), (24, 8, 4), (30, 6, 3), (40, 8, 8)]
)
def test_explicit_and_vectorised_shards_and_partials_agree(d: int, n_heads: int, world_size: int) -> None:
    x, w_qkv, w_o = _weights(d + world_size, d)
    explicit = shard_attention_explicit(w_qkv, w_o, n_heads, world_size)
    fused = shard_attention(w_qkv, w_o, n_heads, world_size)
    assert len(explicit) == len(fused) == world_size
    local = n_heads // world_size
    partials = []
    for (a_qkv, a_o), (b_qkv, b_o) in zip(explicit, fused, strict=True):
        assert a_qkv.shape == (d, 3 * d // world_size) and a_o.shape == (d // world_size, d)
        assert torch.equal(a_qkv, b_qkv) and torch.equal(a_o, b_o)
        partial = attention_on_rank(x, b_qkv, b_o, local)
        one_by_one = attention_on_rank_explicit(x, a_qkv, a_o, local)
        assert torch.allclose(partial, one_by_one, atol=1e-12), (partial - one_by_one).abs().max()
        partials.append(partial)
    full = causal_self_attention(x, w_qkv, w_o, n_heads)
    assert torch.allclose(all_reduce(partials), full, atol=1e-12)
    assert torch.allclose(tensor_parallel_attention(x, w_qkv, w_o, n_heads, world_size), full, atol=1e-12)


def test_rank_one_of_two_holds_the_second_half_of_each_of_q_k_and_v() -> None:
    d = 8
    w_qkv = torch.arange(d * 3 * d, dtype=torch.float64).view(d, 3 * d)
    w_o = torch.arange(d * d, dtype=torch.float64).view(d, d)
    w_qkv_r, w_o_r = shard_attention(w_qkv, w_o, 4, 2)[1]
    columns = [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23]  # heads 2 and 3 of q, of k, of v
    assert torch.equal(w_qkv_r, w_qkv[:, columns]) and torch.equal(w_o_r, w_o[4:])


@pytest.mark.parametrize("n_heads, world_size", [(6, 4), (3, 2), (4, 3), (2, 0)])
def test_a_head_count_the_ranks_do_not_divide_is_refused(n_heads: int, world_size: int) -> None:
    _, w_qkv, w_o = _weights(0, 12)
    for shard in (shard_attention, shard_attention_explicit):
        with pytest.raises(
            ValueError, match=f"n_heads={n_heads} is not a multiple of world_size={world_size}"
        ):
            shard(w_qkv, w_o, n_heads, world_size)
