"""The reference int8 cache: per-token scales, half-to-even rounding, both paths agree."""

from __future__ import annotations

import torch

from graders.reference.int8_cache import (
    attention,
    bytes_per_position,
    dequantize_kv,
    int8_attention,
    quantize_kv,
    quantize_rows,
)


def test_the_vectorised_and_explicit_paths_agree() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, 7, generator=gen) * torch.rand(2, 3, 5, 1, generator=gen) * 4
    x[1, 2, 3] = 0.0
    q, scale = quantize_kv(x)
    q2, scale2 = quantize_rows(x)
    assert q.dtype == torch.int8 and scale.shape == (2, 3, 5, 1)
    assert torch.equal(q, q2) and torch.equal(scale, scale2)
    assert scale[1, 2, 3, 0] == 1.0 and not q[1, 2, 3].any()


def test_the_largest_value_of_each_row_maps_to_127_and_halves_round_to_even() -> None:
    x = torch.tensor([[[[127.0, 2.5, -3.5, 0.5, -127.0, 1.5]]]])
    q, scale = quantize_kv(x)
    assert scale.item() == 1.0
    assert q.flatten().tolist() == [127, 2, -4, 0, -127, 2]


def test_dequantised_attention_is_close_to_fp32_and_the_bytes_are_hd_plus_4() -> None:
    gen = torch.Generator().manual_seed(1)
    qry, k, v = (torch.randn(2, 2, n, 16, generator=gen) for n in (1, 9, 9))
    k_q, k_s = quantize_kv(k)
    v_q, v_s = quantize_kv(v)
    assert (dequantize_kv(k_q, k_s) - k).abs().max() <= k_s.max() / 2 + 1e-6
    out = int8_attention(qry, k_q, k_s, v_q, v_s)
    assert out.shape == (2, 2, 1, 16)
    assert (out - attention(qry, k, v)).abs().max() < 0.05
    assert bytes_per_position(128) == 132
