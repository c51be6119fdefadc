"""graders/reference/padding.py: the batched left-padded path equals each row run alone."""

from __future__ import annotations

import pytest
import torch

from graders.reference.padding import padded_attention, padded_attention_by_rows, real_positions
from tests.graders.reference.test_decode import assert_close
from tests.graders.reference.test_rope import _layer

MASK = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1]])


def test_positions_count_real_tokens() -> None:
    assert real_positions(MASK[:1]).tolist() == [[0, 0, 0, 0, 1, 2, 3]]


@pytest.mark.parametrize("fused", [False, True])
def test_batched_prefill_then_decode_equals_each_row_alone(fused: bool) -> None:
    x, w_qkv, w_o = _layer(3, 10, 32)
    mask = torch.cat([MASK, torch.ones(3, 3, dtype=torch.long)], dim=1)  # 7 prompt columns, 3 decoded
    want = padded_attention_by_rows(x, w_qkv, w_o, 4, mask, base=200.0)
    y, cache = padded_attention(x[:, :7], w_qkv, w_o, 4, mask[:, :7], base=200.0, fused=fused)
    outputs = [y]
    for t in range(7, 10):
        y, cache = padded_attention(
            x[:, t : t + 1], w_qkv, w_o, 4, mask[:, : t + 1], cache, 200.0, fused=fused
        )
        outputs.append(y)
    got = torch.cat(outputs, dim=1)
    real = mask.bool()
    assert torch.isfinite(got).all()
    assert_close(got[real], want[real], "real positions")
    assert cache["k"].shape == (3, 4, 10, 8)
