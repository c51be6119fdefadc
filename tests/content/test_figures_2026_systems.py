"""The 2026 systems figures recomputed by hand from the configs and data sheets they cite, so a slip in
app/content/figures_2026_systems.py (a direction of a link counted twice, the GQA ratio dropped, the
embedding table read) shows up as a wrong number here and not only on a card."""

from __future__ import annotations

import pytest

from app.content.figures import compute_figures
from app.content.figures_2026_systems import causal_imbalance, padded_graph_size, ring_min_block

FIGURES = compute_figures()


def test_deepep_low_latency_payload_and_time_at_line_rate() -> None:
    # 128 tokens x 8 experts x 7168 hidden: FP8 out (1 byte), BF16 back (2 bytes), 50 GB/s.
    dispatch, combine = 128 * 8 * 7168, 128 * 8 * 7168 * 2
    assert FIGURES["wep_ll_dispatch_mb"] == f"{dispatch / 1e6:.2f} MB" == "7.34 MB"
    assert FIGURES["wep_ll_a2a_us_ib"] == f"{(dispatch + combine) / 50e9 * 1e6:.0f} us"
    gemm = 2 * (3 * 7168 * 2048) * 1024 / 1979e12  # balanced: 1,024 token-expert pairs per rank
    assert FIGURES["wep_ll_gemm_us_fp8"] == f"{gemm * 1e6:.1f} us" == "45.6 us"
    assert FIGURES["wep_ll_comm_over_gemm"] == f"{(dispatch + combine) / 50e9 / gemm:.1f}x"


def test_eplb_slots_match_the_reported_layouts() -> None:
    # 256 routed + 32 redundant: 9 per GPU over 32 (the report's "8 plus one"), 2 over 144.
    assert FIGURES["wep_prefill_experts_per_gpu"] == "9"
    assert FIGURES["wep_production_decode_experts_per_gpu"] == "2"
    assert FIGURES["wep_paper_decode_routed_gpus"] == "256"


@pytest.mark.parametrize(
    ("q_heads", "kv_heads", "link", "expected"),
    [(1, 1, 450e9, 989e12 / 450e9), (128, 8, 50e9, 989e12 / 50e9 / 16), (64, 8, 450e9, 989e12 / 450e9 / 8)],
)
def test_ring_block_bound_scales_with_the_gqa_ratio(
    q_heads: int, kv_heads: int, link: float, expected: float
) -> None:
    assert ring_min_block(989e12, link, q_heads, kv_heads) == pytest.approx(expected)


def test_ring_figures_use_one_direction_of_nvlink() -> None:
    assert FIGURES["cp_nvlink_per_direction"] == "450 GB/s"
    assert FIGURES["cp_min_block_mha_nvlink"] == f"{989e12 / 450e9:,.0f}"
    assert FIGURES["cp_min_block_405b_ib"] == f"{989e12 / 50e9 / 16:,.0f}"


def test_causal_imbalance_is_the_last_rank_over_the_mean() -> None:
    for ranks in (2, 4, 8, 16):
        work = [i + 0.5 for i in range(ranks)]  # full blocks before the diagonal, half of it
        assert causal_imbalance(ranks) == pytest.approx(max(work) / (sum(work) / ranks))


def test_405b_cache_and_pass_q_crossover() -> None:
    per_token = 126 * 2 * 8 * 128 * 2
    assert FIGURES["cp_405b_kv_kib_per_token"] == f"{per_token / 1024:g} KiB" == "504 KiB"
    assert FIGURES["cp_405b_kv_gib_1m"] == f"{per_token * 2**20 / 2**30:.0f} GiB"
    # pass-Q round trip 2 x 128 x 128 x 2 bytes against pass-KV 2 x 8 x 128 x 2 bytes
    assert FIGURES["cp_405b_pass_q_crossover"] == f"{(2 * 8 * 128 * 2) / (2 * 128 * 128 * 2):.2%}"


def test_gpt_fast_floor_reads_no_embedding_table() -> None:
    # Llama-2-7B: 6,738,415,616 parameters, minus the 32000 x 4096 input table, BF16, 2,039 GB/s.
    read = (6_738_415_616 - 32000 * 4096) * 2
    assert FIGURES["cpu_llama2_7b_read_gb"] == f"{read / 1e9:.1f} GB"
    assert FIGURES["cpu_llama2_7b_floor_ms_a100"] == f"{read / 2.039e12 * 1e3:.2f} ms"
    assert FIGURES["cpu_eager_ms_per_token"] == "39.2 ms"  # 1 / 25.5 tok/s


def test_padding_goes_to_the_next_captured_size() -> None:
    assert [padded_graph_size(b) for b in (1, 3, 5, 8, 9, 17, 256)] == [1, 4, 8, 8, 16, 24, 256]
    with pytest.raises(ValueError, match="batch=257"):
        padded_graph_size(257)  # above the largest graph: the engine runs it eagerly


def test_lora_adapter_and_mask_sizes() -> None:
    per_layer = 16 * ((4096 + 4096) * 2 + (4096 + 1024) * 2 + (4096 + 14336) * 3)
    assert FIGURES["lora_llama3_8b_r16_mb"] == f"{per_layer * 32 * 2 / 1e6:.1f} MB" == "83.9 MB"
    assert FIGURES["so_mask_bytes"] == f"{-(-128256 // 32) * 4:,} bytes" == "16,032 bytes"
