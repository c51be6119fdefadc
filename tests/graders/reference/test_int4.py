"""graders/reference/int4.py: the explicit, weight-by-weight path and the vectorised one agree."""

from __future__ import annotations

import pytest
import torch

from graders.reference.int4 import (
    dequantize_int4,
    dequantize_int4_explicit,
    largest_allowed,
    quantize_int4,
    quantize_int4_explicit,
    w4a16_matmul,
)
from graders.sandbox.footprint import measured_call


def _weight(seed: int, N: int = 5, K: int = 24) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(N, K, generator=g)
    w[0, :8] = 0.75  # a constant group (with group_size 8)
    w[1, 8:16] = w[1, 8:16].abs() + 1.0  # all positive: zero clamps to 0
    w[2, 16:] = -w[2, 16:].abs() - 1.0  # all negative: zero clamps to 15
    return w


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("group_size", [2, 8, 24])
def test_explicit_and_vectorised_quantizers_agree_bit_for_bit(seed: int, group_size: int) -> None:
    w = _weight(seed)
    packed, scales, zeros = quantize_int4(w, group_size)
    e_packed, e_scales, e_zeros = quantize_int4_explicit(w, group_size)
    assert torch.equal(packed, e_packed) and torch.equal(zeros, e_zeros) and torch.equal(scales, e_scales)
    assert packed.dtype == zeros.dtype == torch.uint8 and scales.dtype == torch.float32
    deq = dequantize_int4(packed, scales, zeros, group_size)
    assert torch.equal(deq, dequantize_int4_explicit(packed, scales, zeros, group_size))


def test_nibble_order_rounding_and_the_constant_group_by_hand() -> None:
    w = torch.tensor([[0.0, 1.5, 2.5, 15.0], [-2.0, -2.0, -2.0, -2.0]])
    packed, scales, zeros = quantize_int4(w, 4)
    assert scales.tolist() == [[1.0], [1.0]] and zeros.tolist() == [[0], [2]]
    # row 0: codes 0, 2 (1.5 -> 2), 2 (2.5 -> 2, half to even), 15 -> bytes 0x20, 0xF2
    assert packed.tolist() == [[0x20, 0xF2], [0, 0]]
    with pytest.raises(ValueError, match="K=6 is not a multiple of group_size=4"):
        quantize_int4(torch.zeros(1, 6), 4)
    with pytest.raises(ValueError, match="group_size=3"):
        quantize_int4(torch.zeros(1, 6), 3)


def test_the_grouped_matmul_matches_and_never_builds_the_whole_weight() -> None:
    g = torch.Generator().manual_seed(1)
    w, x = torch.randn(48, 64, generator=g), torch.randn(3, 64, generator=g)
    packed, scales, zeros = quantize_int4(w, 16)
    want = x @ dequantize_int4(packed, scales, zeros, 16).T
    got, largest = measured_call(w4a16_matmul, (x, packed, scales, zeros, 16), {})
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
    assert largest == largest_allowed(3, 48, 16) == 48 * 16
