"""graders/reference/llama.py: the per-head path and the repeated-kv one agree, over every schedule."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from graders.reference.llama import LlamaDims, llama_block, llama_block_explicit, random_weights, rmsnorm
from graders.reference.rope import apply_rope


def _setup(seed: int, H: int = 6, H_kv: int = 2) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    weights = {k: w.double() for k, w in random_weights(gen, 20, H, H_kv, 4, 28).items()}
    return torch.randn(2, 9, 20, generator=gen, dtype=torch.float64), weights


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("H, H_kv", [(6, 2), (6, 6), (6, 1)])
@pytest.mark.parametrize("chunks", [[9], [4, 1, 4], [2, 1, 1, 1, 1, 1, 1, 1]])
def test_per_head_and_repeated_paths_agree_over_every_schedule(
    seed: int, H: int, H_kv: int, chunks: list[int]
) -> None:
    x, weights = _setup(seed, H, H_kv)
    full, _ = llama_block_explicit(x, weights, H, H_kv, base=500.0, eps=1e-3)
    cache: dict[str, torch.Tensor] | None = None
    cache_e: dict[str, torch.Tensor] | None = {}
    s = 0
    for n in chunks:
        y, cache = llama_block(x[:, s : s + n], weights, H, H_kv, cache, 500.0, 1e-3)
        y_e, cache_e = llama_block_explicit(x[:, s : s + n], weights, H, H_kv, cache_e, 500.0, eps=1e-3)
        diff = (y - y_e).abs()
        assert torch.allclose(y, y_e, atol=1e-12), (diff.max().item(), diff.mean().item())
        assert torch.allclose(y, full[:, s : s + n], atol=1e-12)  # one call over all tokens agrees
        s += n
        assert set(cache) == {"k", "v"} and cache["k"].shape == cache["v"].shape == (2, H_kv, s, 4)
        assert all(torch.equal(cache[key], cache_e[key]) for key in cache)


def test_the_layer_matches_torchs_own_rms_norm_silu_and_gqa_attention() -> None:
    """A third formulation from torch's building blocks: F.rms_norm and SDPA's enable_gqa."""
    x, w = _setup(3)
    B, T, d = x.shape

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(B, T, -1, 4).transpose(1, 2)

    z = F.rms_norm(x, (d,), w["attn_norm"], eps=1e-5)
    pos = torch.arange(T)
    q, k, v = apply_rope(heads(z @ w["w_q"]), pos), apply_rope(heads(z @ w["w_k"]), pos), heads(z @ w["w_v"])
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (B, 6, T, 4)
    h = x + o.transpose(1, 2).reshape(B, T, 24) @ w["w_o"]
    m = F.rms_norm(h, (d,), w["mlp_norm"], eps=1e-5)
    want = h + (F.silu(m @ w["w_gate"]) * (m @ w["w_up"])) @ w["w_down"]
    assert torch.allclose(llama_block(x, w, 6, 2)[0], want, atol=1e-10)


def test_rmsnorm_puts_eps_inside_the_root_per_token() -> None:
    x = torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=torch.float64)
    out = rmsnorm(x, torch.ones(2, dtype=torch.float64), eps=0.5)
    assert torch.allclose(out[0], x[0] / (12.5 + 0.5) ** 0.5) and torch.equal(out[1], x[1])


def test_head_counts_that_do_not_divide_and_shapes_that_do_not_fit_are_refused() -> None:
    _, weights = _setup(0)
    with pytest.raises(ValueError, match="n_q=6 is not a multiple of n_kv=4"):
        LlamaDims.of(weights, 6, 4)
    with pytest.raises(ValueError, match="w_k has shape"):
        LlamaDims.of(weights, 6, 3)
    assert LlamaDims.of(weights, 6, 2) == LlamaDims(20, 6, 2, 4, 28)
