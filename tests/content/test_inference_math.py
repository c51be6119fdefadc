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


def test_windowed_cache_counts_full_and_window_layers() -> None:
    # Mistral-7B-v0.1 at 32,768 tokens: every layer holds 4,096 tokens, 8x less than full.
    full = im.windowed_kv_bytes(32, 0, 4096, 8, 128, 32768, 2)
    windowed = im.windowed_kv_bytes(0, 32, 4096, 8, 128, 32768, 2)
    assert full == 2 * 8 * 128 * 2 * 32 * 32768
    assert full == 8 * windowed
    # Shorter than the window, a window layer holds every token.
    assert im.windowed_kv_bytes(0, 32, 4096, 8, 128, 100, 2) == im.windowed_kv_bytes(
        32, 0, 4096, 8, 128, 100, 2
    )
    # Gemma-2-9B at 8,192: 21 full layers of 8,192 plus 21 window layers of 4,096.
    assert im.windowed_kv_bytes(21, 21, 4096, 8, 256, 8192, 2) == 2 * 8 * 256 * 2 * (21 * 8192 + 21 * 4096)
    assert im.window_reach(32, 4096) == 131072


def test_prefill_attention_flops_is_quadratic() -> None:
    assert im.prefill_attention_flops(1, 1, 1, 10) == 200
    assert im.prefill_attention_flops(32, 32, 128, 2000) == 4 * im.prefill_attention_flops(32, 32, 128, 1000)


def test_log_sum_exp_merge_equals_one_softmax() -> None:
    scores, values = [1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]
    probs = im.softmax(scores)
    whole = sum(p * v for p, v in zip(probs, values, strict=True))
    halves = []
    for lo, hi in ((0, 2), (2, 4)):
        local = im.softmax(scores[lo:hi])
        halves.append(
            (sum(p * v for p, v in zip(local, values[lo:hi], strict=True)), im.logsumexp(scores[lo:hi]))
        )
    assert im.merge_attention_splits(halves) == pytest.approx(whole)
    assert im.logsumexp([0.0, 0.0]) == pytest.approx(0.6931471805599453)


def test_sampling_filters() -> None:
    assert im.softmax([0.0, 0.0]) == [0.5, 0.5]
    assert im.softmax([2.0, 0.0], temperature=2.0) == pytest.approx(im.softmax([1.0, 0.0]))
    with pytest.raises(ValueError, match="greedy"):
        im.softmax([1.0], temperature=0)
    probs = [0.5, 0.3, 0.15, 0.05]
    assert im.nucleus_size(probs, 0.5) == 1
    assert im.nucleus_size(probs, 0.8) == 2
    assert im.nucleus_size(probs, 0.81) == 3
    assert im.min_p_kept(probs, 0.1) == 4  # threshold 0.05 keeps the 0.05 token
    assert im.min_p_kept(probs, 0.5) == 2  # threshold 0.25


def test_penalties() -> None:
    assert im.repetition_penalty(2.4, 1.2) == pytest.approx(2.0)
    assert im.repetition_penalty(-1.0, 1.2) == pytest.approx(-1.2)
    assert im.frequency_presence_penalty(3.0, 3, 0.3, 0.5) == pytest.approx(1.6)
    assert im.frequency_presence_penalty(3.0, 0, 0.3, 0.5) == 3.0


def test_reusable_prefix_tokens_counts_whole_blocks() -> None:
    assert im.reusable_prefix_tokens(1000, 16) == 992
    assert im.reusable_prefix_tokens(15, 16) == 0
    assert im.reusable_prefix_tokens(32, 16) == 32


def test_speculative_walltime_speedup_theorem_3_8() -> None:
    # alpha 0.8, gamma 4: 3.3616 tokens per round; four drafts at 5% of a target pass cost 1.2.
    assert im.speculative_walltime_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    # A free draft gives the token count itself; an expensive one can make it a slowdown.
    assert im.speculative_walltime_speedup(0.8, 4, 0.0) == pytest.approx(3.3616)
    assert im.speculative_walltime_speedup(0.3, 4, 0.5) < 1


def test_pipeline_bubble_fraction() -> None:
    assert im.pipeline_bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert im.pipeline_bubble_fraction(4, 16) == pytest.approx(3 / 19)
    assert im.pipeline_bubble_fraction(1, 8) == 0


def test_expected_experts_touched() -> None:
    # Mixtral: top-2 of 8, a token misses a given expert with probability 6/8.
    assert im.expected_experts_touched(8, 2, 1) == pytest.approx(2.0)
    assert im.expected_experts_touched(8, 2, 4) == pytest.approx(8 * (1 - 0.75**4))
    assert im.expected_experts_touched(256, 8, 1) == pytest.approx(8.0)


def test_ring_allreduce_bytes_per_gpu() -> None:
    assert im.ring_allreduce_bytes_per_gpu(16384, 8) == pytest.approx(28672)
    assert im.ring_allreduce_bytes_per_gpu(1000, 2) == pytest.approx(1000)


def test_acceptance_rate_is_the_overlap_of_the_two_distributions() -> None:
    assert im.acceptance_rate((0.5, 0.3, 0.2), (0.2, 0.6, 0.2)) == pytest.approx(0.7)
    assert im.acceptance_rate((0.5, 0.5), (0.5, 0.5)) == pytest.approx(1.0)
    assert im.acceptance_rate((1.0, 0.0), (0.0, 1.0)) == 0
    with pytest.raises(ValueError):
        im.acceptance_rate((0.5, 0.5), (1.0,))


def test_moe_params_count_every_expert_in_total_and_top_k_as_active() -> None:
    # Two layers, 10 attention and 1 router parameters each, four experts of 100, 7 embedding.
    shape = {"layers": 2, "attention_params": 10, "expert_params": 100, "router_params": 1}
    total, active = im.moe_params(**shape, embedding_params=7, experts=4, top_k=1)
    assert total == 2 * (10 + 1 + 4 * 100) + 7
    assert active == 2 * (10 + 1 + 1 * 100) + 7
    # Mixtral-8x7B (config.json: 32 layers, hidden 4096, 8 KV heads of 128, MLP 14336, vocab
    # 32000): Mistral AI's 46.7B total and 12.9B per token.
    d, layers = 4096, 32
    attention = 2 * d * d + 2 * d * 8 * 128 + 2 * d  # q, o, k, v and two norms
    total, active = im.moe_params(
        layers=layers,
        attention_params=attention,
        expert_params=3 * d * 14336,
        router_params=d * 8,
        embedding_params=2 * 32000 * d + d,
        experts=8,
        top_k=2,
    )
    assert round(total / 1e9, 1) == 46.7 and round(active / 1e9, 1) == 12.9
