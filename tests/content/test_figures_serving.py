"""The serving figure functions (figures_serving.py) against values worked by hand."""

from __future__ import annotations

import dataclasses
import math

import pytest

from app.content import figures_serving as fs
from app.content.shapes import LATER_MODELS

FIG = fs.figures()


def test_end_to_end_latency_counts_n_minus_one_decode_steps() -> None:
    assert fs.end_to_end_latency(0.2, 0.025, 401) == pytest.approx(10.2)
    assert fs.end_to_end_latency(0.5, 0.1, 1) == pytest.approx(0.5)


def test_tail_chance_compounds_over_tokens() -> None:
    assert fs.chance_of_a_tail_event(0.01, 1) == pytest.approx(0.01)
    assert fs.chance_of_a_tail_event(0.01, 100) == pytest.approx(1 - 0.99**100)
    assert FIG["serving_p99_hit_100_tokens"] == "63.4%"


def test_slo_attainment_needs_both_slos() -> None:
    reqs = [(0.1, 0.01), (2.0, 0.01), (0.1, 0.2), (2.0, 0.2)]
    assert fs.slo_attainment(reqs, 1.0, 0.05) == 0.25
    assert fs.slo_attainment(reqs, 1.0, math.inf) == 0.5
    assert fs.goodput({1.0: 0.95, 2.0: 0.91, 3.0: 0.89}, 0.9) == 2.0
    assert fs.goodput({1.0: 0.5}, 0.9) == 0.0
    assert FIG["serving_attainment_example"] == "60%"


def test_cost_floors_for_qwen() -> None:
    # 7.62B parameters in bf16 = 15.23 GB in memory; a step reads all but the 152,064 x 3,584
    # input embedding table, 14.14 GB: 3.35 TB/s / 14.14 GB = 237 tokens/s at batch 1.
    assert FIG["serving_qwen_weights_gb"] == "15.23 GB"
    assert FIG["serving_qwen_read_gb"] == "14.14 GB"
    assert FIG["serving_qwen_b1_tok_s"] == "237 tokens/s"
    # $2 an hour / (237 x 3,600) tokens = $2.35 per million.
    assert FIG["serving_qwen_b1_cost"] == "$2.35"
    m = LATER_MODELS["qwen25_7b"]
    step = fs.decode_step_seconds(15.23e9, m.kv_bytes(1), 64, 2048)
    assert step == pytest.approx((15.23e9 + 64 * 2048 * 57344) / 3.35e12)


def test_prefill_flops_and_chunk_rereads() -> None:
    m = LATER_MODELS["qwen25_7b"]
    layers = 2 * m.layer_params() * 100
    attention = 2 * 100 * 100 * 28 * 128 * 28
    head = 2 * 152064 * 3584  # the LM head on the last position only
    assert fs.prefill_flops(m, 100) == layers + attention + head
    # Three chunks of 4 over a 10-token prompt read back 0, 4 and 8 tokens of cache.
    assert fs.chunk_cache_reread_bytes(10, 4, 1.0) == 12
    assert FIG["chunked_chunks_8k"] == "18"  # ceil(8192 / 480)


def test_cache_transfer_over_one_port() -> None:
    # Llama-3.1-70B, 4,096 tokens x 327,680 B = 1.34 GB; at 50 GB/s that is 26.8 ms.
    assert FIG["chunked_70b_cache_4k_gb"] == "1.34 GB"
    assert FIG["chunked_70b_transfer_1link_ms"] == "26.8 ms"
    assert FIG["chunked_v3_transfer_ms"] == "5.8 ms"  # 70,272 x 4,096 B / 50 GB/s


def test_decode_capacity_under_a_tpot_slo() -> None:
    m = LATER_MODELS["qwen25_7b"]
    params = fs.qwen25_7b_params()
    read = (params - 152064 * 3584) * 2
    # (80 GB - 15.23 GB in memory) / (2,048 x 57,344 B) = 551.5 sequences;
    # (25 ms x 3.35 TB/s - 14.14 GB read) / (2,048 x 57,344 B) = 592.7.
    assert fs.decode_capacity(m, 2048, 0.025) == (551, 592)
    assert fs.decode_capacity(m, 2048, 0.015)[1] == 307
    # Memory-bound at that batch: the step is the bandwidth time, not the compute time.
    step = fs.roofline_decode_step(m, 551, 2048)
    assert step == pytest.approx((read + 551 * 2048 * 57344) / 3.35e12)
    # At batch 1 with no context the step is the weights it reads over bandwidth.
    assert fs.roofline_decode_step(m, 1, 0) == pytest.approx(read / 3.35e12)
    assert FIG["serving_cap_slo25_req_s"] == "58.5 req/s"  # 551 / (400 x 23.5 ms)


def test_qwen25_7b_counts_its_qkv_biases_once() -> None:
    # Qwen/Qwen2.5-7B: 28 layers of q (3,584), k and v (512 each) biases, 4,608 per layer.
    m = LATER_MODELS["qwen25_7b"]
    without = dataclasses.replace(m, qkv_bias=False).llama_params()
    assert fs.qwen25_7b_params() - without == 28 * (3584 + 2 * 512)
    # The model card's "6.53B non-embedding parameters": the total less both 152,064 x 3,584 tables.
    assert round((fs.qwen25_7b_params() - 2 * 152064 * 3584) / 1e9, 2) == 6.53
