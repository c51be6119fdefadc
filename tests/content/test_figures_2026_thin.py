"""The thin-topic figures (app/content/figures_2026_thin.py) against values worked by hand."""

from __future__ import annotations

from app.content import figures_2026_thin as thin
from app.content.figures import compute_figures
from app.content.shapes import LLAMA3_8B

FIGURES = thin.figures()


def test_every_name_is_prefixed_and_merged_once() -> None:
    assert all(name.startswith("thin_") for name in FIGURES)
    merged = compute_figures()
    assert all(merged[name] == text for name, text in FIGURES.items())


def test_parallel_sampling_blocks_by_hand() -> None:
    # 1,000 tokens = 62 full 16-token blocks + 8 tokens; each sample copies the tail and adds 200.
    assert FIGURES["thin_paged_full_prompt_blocks"] == "62"
    assert FIGURES["thin_paged_blocks_per_sample"] == str(-(-(8 + 200) // 16))  # 13
    assert FIGURES["thin_paged_blocks_shared"] == str(62 + 4 * 13)
    assert FIGURES["thin_paged_blocks_unshared"] == str(4 * 75)  # 1,200 tokens = 75 blocks each


def test_causal_tiles_by_hand() -> None:
    # 32 x 32 tiles, the lower triangle with its diagonal: 32 * 33 / 2.
    assert FIGURES["thin_flash_tiles_computed"] == "528"
    assert FIGURES["thin_flash_tiles_share"] == "51.6%"


def test_decode_attention_intensity_is_the_group_size() -> None:
    assert thin.gqa_decode_attention_intensity(1) == 1
    assert thin.gqa_decode_attention_intensity(8) == 8
    assert thin.gqa_decode_attention_intensity(4, bytes_per_element=1) == 8  # FP8 doubles it
    # Absorbed MLA: 128 heads x (2 x 576 + 2 x 512) FLOPs over 576 x 2 bytes.
    assert abs(thin.mla_decode_attention_intensity() - 128 * (2 * 576 + 2 * 512) / 1152) < 1e-9


def test_mixtral_expert_offload_by_hand() -> None:
    expert_bytes = 3 * 4096 * 14336 * 2
    assert FIGURES["thin_moe_mixtral_expert_mb"] == f"{expert_bytes / 1e6:.1f} MB"
    assert FIGURES["thin_moe_mixtral_offload_gb_per_token"] == f"{64 * expert_bytes / 1e9:.1f} GB"


def test_cache_equals_weights_crossover() -> None:
    tokens = thin.tokens_where_cache_equals_weights(LLAMA3_8B)
    assert abs(tokens * 128 * 1024 - LLAMA3_8B.dense_params() * 2) < 1  # 128 KiB per token
    assert FIGURES["thin_kvmem_tokens_equal_weights_llama3_8b"] == f"{tokens:,.0f}"


def test_padding_waste_by_hand() -> None:
    lengths = (120, 250, 400, 600, 900, 1200, 1600, 2000)
    assert sum(lengths) == 7070
    assert FIGURES["thin_batch_pad_waste"] == f"{1 - 7070 / 16000:.1%}"


def test_the_naive_loop_on_an_h100_is_a_few_times_slower_not_two_thousand() -> None:
    figures = FIGURES
    # The first cache-less step is a 2,000-token prefill: 29.0 TFLOP / 989 TFLOPS = 29.3 ms, above
    # the 4.48 ms weight read, so compute-bound.
    assert figures["thin_naive_prefill_tflop_2000"] == "29.0 TFLOP"
    assert thin.naive_step_seconds(LLAMA3_8B, 2000) == LLAMA3_8B.prefill_flops(2000) / 989e12
    assert figures["thin_naive_step_ms_first"] == "29.3 ms"
    # The cached step reads 15.01 GB of weights and 2,000 x 128 KiB = 262,144,000 B of cache at
    # 3.35 TB/s: 4.56 ms. The ratio is 6.4x where the work ratio is 2,001x.
    assert LLAMA3_8B.kv_bytes(2000) == 262_144_000
    assert (
        thin.cached_step_seconds(LLAMA3_8B, 2000) == (LLAMA3_8B.decode_read_bytes() + 262_144_000) / 3.35e12
    )
    assert figures["thin_naive_cached_step_ms_first"] == "4.56 ms"
    assert figures["thin_naive_time_ratio_first"] == "6.4x"
    assert figures["thin_naive_time_ratio_last"] == "8.1x"  # 36.9 ms against 4.58 ms at 2,499
    # A short prefill is bound by the weight read instead: 10 tokens cannot take less than 4.48 ms.
    assert thin.naive_step_seconds(LLAMA3_8B, 10) == LLAMA3_8B.decode_read_bytes() / 3.35e12
    # The whole answer: 500 naive steps against one prefill and 499 cached steps.
    assert (figures["thin_naive_total_s"], figures["thin_naive_cached_total_s"]) == ("16.5 s", "2.31 s")
    assert figures["thin_naive_total_ratio"] == "7.2x"
