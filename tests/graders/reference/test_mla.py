"""graders/reference/mla.py: the explicit path (per-head keys rebuilt) and the absorbed one agree."""

from __future__ import annotations

import pytest
import torch

from graders.reference.mla import MLADims, mla_attention, mla_attention_explicit, random_weights
from graders.sandbox.footprint import measured_call


def _setup(
    seed: int, B: int = 2, d: int = 24, H: int = 3, dn: int = 6, dr: int = 4, dc: int = 10, dv: int = 5
):
    gen = torch.Generator().manual_seed(seed)
    weights = {k: v.double() for k, v in random_weights(gen, d, H, dn, dr, dc, dv).items()}
    return torch.randn(B, 9, d, generator=gen, dtype=torch.float64), weights, H


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("chunks", [[9], [4, 1, 4], [2, 1, 1, 1, 1, 1, 1, 1]])
def test_explicit_and_absorbed_agree_over_every_schedule(seed: int, chunks: list[int]) -> None:
    x, weights, H = _setup(seed)
    full, _ = mla_attention_explicit(x, weights, H, base=500.0)
    cache_a: dict[str, torch.Tensor] | None = None
    cache_e: dict[str, torch.Tensor] | None = {}
    s = 0
    for n in chunks:
        y_a, cache_a = mla_attention(x[:, s : s + n], weights, H, cache_a, 500.0)
        y_e, cache_e = mla_attention_explicit(x[:, s : s + n], weights, H, cache_e, base=500.0)
        assert torch.allclose(y_a, y_e, atol=1e-12), (y_a - y_e).abs().max()
        assert torch.allclose(y_a, full[:, s : s + n], atol=1e-12)  # one call over all tokens agrees
        s += n
        assert set(cache_a) == {"c", "k_rope"} and cache_a["c"].shape == (2, s, 10)
        assert cache_a["k_rope"].shape == (2, s, 4)
        for key in cache_a:
            assert torch.equal(cache_a[key], cache_e[key])


def test_the_absorbed_decode_step_builds_nothing_per_head_per_position() -> None:
    gen = torch.Generator().manual_seed(0)
    weights = random_weights(gen, 32, 8, 16, 8, 12, 10)
    dims = MLADims.of(weights, 8)
    S = 400
    cache = {"c": torch.randn(1, S - 1, 12, generator=gen), "k_rope": torch.randn(1, S - 1, 8, generator=gen)}
    x = torch.randn(1, 1, 32, generator=gen)
    _, largest = measured_call(mla_attention, (x, weights, 8, cache), {})
    _, explicit_largest = measured_call(mla_attention_explicit, (x, weights, 8, cache), {})
    assert largest < 1 * 8 * S * dims.per_head_size <= 8 * explicit_largest
    assert largest == S * 12  # the extended latent cache is the largest tensor


def test_sizes_that_do_not_fit_are_refused() -> None:
    gen = torch.Generator().manual_seed(0)
    weights = random_weights(gen, 16, 2, 4, 4, 6, 4)
    with pytest.raises(ValueError, match="n_heads=3"):
        MLADims.of(weights, 3)
