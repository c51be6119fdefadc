"""The serving formulas against hand-worked values."""

from __future__ import annotations

import pytest

from app.content import inference_math as im
from app.content.hardware import A100_80GB, H100_SXM, H200_SXM


def test_ridge_points_from_the_data_sheets() -> None:
    assert A100_80GB.ridge_flops_per_byte == pytest.approx(153.0, abs=0.1)
    assert H100_SXM.ridge_flops_per_byte == pytest.approx(295.2, abs=0.1)
    assert H200_SXM.ridge_flops_per_byte == pytest.approx(206.0, abs=0.1)


def test_crossover_batch_scales_with_bytes_per_param() -> None:
    # bf16 weights: the ridge point times 2 bytes over 2 FLOPs per parameter.
    assert im.crossover_batch(H100_SXM, 2) == pytest.approx(H100_SXM.ridge_flops_per_byte)
    assert im.crossover_batch(H100_SXM, 1) == pytest.approx(H100_SXM.ridge_flops_per_byte / 2)


def test_min_time_per_token_counts_weights_and_cache() -> None:
    assert im.min_time_per_token(14e9, 0, H100_SXM) == pytest.approx(14e9 / 3.35e12)
    assert im.min_time_per_token(14e9, 1e9, H100_SXM) == pytest.approx(15e9 / 3.35e12)


def test_mla_and_quantized_cache_bytes() -> None:
    assert im.mla_bytes_per_token(61, 512, 64, 2) == 61 * 576 * 2
    # int8 with one fp16 scale per 128 elements: 1 byte + 2/128 bytes per element.
    assert im.quantized_kv_bytes_per_token(32, 8, 128, 8, 128) == pytest.approx(
        2 * 32 * 8 * 128 * (1 + 2 / 128)
    )


def test_kv_heads_per_gpu_splits_then_replicates() -> None:
    assert im.kv_heads_per_gpu(8, 2) == 4
    assert im.kv_heads_per_gpu(8, 8) == 1
    assert im.kv_heads_per_gpu(8, 16) == 1
    with pytest.raises(ValueError, match="does not divide"):
        im.kv_heads_per_gpu(8, 3)


def test_speculative_expected_tokens() -> None:
    assert im.speculative_expected_tokens(0.0, 4) == pytest.approx(1.0)
    assert im.speculative_expected_tokens(1.0, 4) == 5.0
    assert im.speculative_expected_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)


def test_cost_per_million_tokens() -> None:
    # $3.60 an hour at 1,000 tokens/s: 3.6M tokens an hour, so $1 per million.
    assert im.cost_per_million_tokens(3.6, 1000) == pytest.approx(1.0)
