"""The hardware and later-model figures against hand-worked values, and `kvprep figures`' GPU table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.content.figures import compute_figures, gpt2_small_params, naive_vs_cached_work
from app.content.figures_hardware import attention_prefill_flops, prefill_flops
from app.content.hardware import GPUS
from app.content.shapes import DEEPSEEK_V3, GEMMA2_9B, GPT2_SMALL, LLAMA3_8B, LLAMA31_405B, QWEN25_7B

FIGURES = compute_figures()


def test_ridge_points_and_crossover_batches() -> None:
    # 312e12 / 2.039e12, 989e12 / 3.35e12, 989e12 / 4.8e12
    assert FIGURES["roofline_ridge_a100"] == "153 FLOP/byte"
    assert FIGURES["roofline_ridge_h100"] == "295 FLOP/byte"
    assert FIGURES["roofline_ridge_h200"] == "206 FLOP/byte"
    # bf16 weights: 2 FLOPs per 2 bytes per sequence, so the crossover batch equals the ridge.
    assert FIGURES["roofline_crossover_h100_bf16"] == "295 sequences"
    assert FIGURES["roofline_crossover_h100_int8"] == "148 sequences"  # 147.6
    assert FIGURES["roofline_crossover_h100_int4"] == "74 sequences"
    assert FIGURES["roofline_crossover_h100_bf16_ceil"] == "296 sequences"
    assert FIGURES["roofline_decode_intensity_b1_bf16"] == "1 FLOP/byte"


def test_batch1_decode_bounds() -> None:
    # Llama-2-7B: 6,738,415,616 parameters x 2 bytes = 13.48 GB in memory. A step reads all but
    # the 32,000 x 4,096 input embedding table: 6,607,343,616 x 2 = 13.21 GB; / 3.35 TB/s = 3.94 ms.
    assert FIGURES["llama2_7b_weights_gb_bf16"] == "13.48 GB"
    assert FIGURES["llama2_7b_read_gb_bf16"] == "13.21 GB"
    assert FIGURES["roofline_min_ms_llama2_7b_h100"] == "3.94 ms"
    assert FIGURES["roofline_max_tps_llama2_7b_h100"] == "253 tokens/s"  # 253.5, floored: a bound
    assert FIGURES["roofline_min_ms_llama2_7b_a100"] == "6.48 ms"
    assert FIGURES["roofline_min_ms_llama2_7b_h200"] == "2.75 ms"
    # Llama-3-8B: 16.06 GB in memory, 15.01 GB read (its 128,256-row table is 7% of the bytes).
    assert FIGURES["llama3_8b_weights_gb_bf16"] == "16.06 GB"
    assert FIGURES["llama3_8b_read_gb_bf16"] == "15.01 GB"
    assert FIGURES["roofline_min_ms_llama3_8b_h100"] == "4.48 ms"
    # A 32k MHA cache (17.18 GB) outweighs the weights and more than doubles the bound.
    assert FIGURES["roofline_min_ms_llama2_7b_h100_32k"] == "9.07 ms"
    assert FIGURES["llama31_70b_weights_gb_bf16"] == "141.1 GB"  # more than one 80 GB GPU
    assert FIGURES["roofline_min_ms_llama31_70b_8xh100"] == "5.19 ms"


def test_decode_reads_every_matrix_but_an_untied_input_embedding() -> None:
    for model in (LLAMA3_8B, QWEN25_7B):
        table = model.vocab * model.hidden
        assert model.decode_read_bytes() == (model.dense_params() - table) * 2
    # Gemma-2 ties its table to the LM head: the one matrix is read once per step, as the head.
    assert GEMMA2_9B.decode_read_bytes() == GEMMA2_9B.dense_params() * 2
    assert FIGURES["gemma2_9b_read_gb_bf16"] == FIGURES["gemma2_9b_weights_gb_bf16"]


def test_mbu_and_mfu_examples() -> None:
    # 150 tokens/s x 13.21 GB read = 1,982 GB/s of 3,350: 59%.
    assert FIGURES["roofline_mbu_example"] == "59%"
    # The prefill convention: 2 x 6.98e9 layer parameters x 4,096 + causal attention 4.40e12
    # + the LM head once (2 x 525M) = 61.6 TFLOP; in 150 ms, 411 TFLOP/s of 989.
    assert FIGURES["roofline_mfu_example_tflop"] == "61.6 TFLOP"
    assert FIGURES["roofline_mfu_example"] == "42%"


def test_one_prefill_convention_everywhere() -> None:
    """The same 4,096-token Llama-3-8B prefill used to print 62.2, 62.3 and 67 ms on three cards."""
    n = 4096
    layers = 2 * LLAMA3_8B.layer_params() * n
    attention = 2 * n * n * LLAMA3_8B.q_heads * LLAMA3_8B.head_dim * LLAMA3_8B.layers
    head = 2 * LLAMA3_8B.vocab * LLAMA3_8B.hidden  # the last position only
    assert LLAMA3_8B.prefill_flops(n) == layers + attention + head
    assert FIGURES["roofline_prefill_ms_llama3_8b_4k_h100"] == "62.3 ms"
    assert FIGURES["latency_prefill_ms_llama3_8b_4k_512"] == "62 ms"
    assert FIGURES["sched_recompute_ms_4k"] == "62.3 ms"
    # A cached prefix skips its layers' work but its keys are still attended to.
    assert LLAMA3_8B.prefill_flops(n, cached=n) == head


def test_parameter_counts_of_the_later_configs() -> None:
    # Published totals: Gemma-2-9B 9,241,705,984 (tied embeddings, four norms per block);
    # Qwen2.5-7B 7.62B; GPT-2 small 124,439,808.
    assert GEMMA2_9B.dense_params() == 9_241_705_984
    assert QWEN25_7B.dense_params() == pytest.approx(7.6156e9, rel=1e-4)
    assert LLAMA3_8B.dense_params() == LLAMA3_8B.llama_params()
    assert gpt2_small_params() == 124_439_808
    assert FIGURES["gpt2_small_weights_mb_fp32"] == "498 MB"  # 124M x 4 bytes
    assert FIGURES["gpt2_small_cache_vs_weights"] == "9.7x"  # 4.50 GiB against 498 MB
    assert GPT2_SMALL.kv_bytes(1024, 64) == 4.5 * 2**30


def test_cache_per_token_of_the_later_configs() -> None:
    assert FIGURES["qwen25_7b_kib_per_token"] == "56 KiB"  # 2 x 28 x 4 x 128 x 2
    assert FIGURES["gemma2_9b_kib_per_token"] == "336 KiB"  # 2 x 42 x 8 x 256 x 2
    assert FIGURES["mixtral_8x7b_kib_per_token"] == "128 KiB"
    assert FIGURES["llama31_70b_kib_per_token"] == "320 KiB"
    assert FIGURES["llama31_405b_kib_per_token"] == "504 KiB"  # 2 x 126 x 8 x 128 x 2
    assert LLAMA31_405B.kv_bytes(1) == 516_096
    assert FIGURES["llama31_70b_gib_128k"] == "40.00 GiB"
    # MLA: 61 layers x (512 latent + 64 RoPE key) x 2 bytes.
    assert DEEPSEEK_V3.layers * (DEEPSEEK_V3.kv_lora_rank + DEEPSEEK_V3.qk_rope_head_dim) * 2 == 70_272
    assert FIGURES["deepseek_v3_bytes_per_token"] == "70,272"


def test_whole_model_prefill_32k_against_1m() -> None:
    """The reviewer's figure: attention's share of prefill FLOPs at 32k and 1M, and the ratio."""
    n32, n1m = 32768, 2**20
    attn32 = 2 * n32**2 * 4096 * 32  # causal: n^2/2 pairs, QK^T and PV, 2 FLOPs each
    assert attention_prefill_flops(LLAMA3_8B, n32) == attn32
    linear32 = 2 * (LLAMA3_8B.llama_params() - 2 * 128256 * 4096 - 4096) * n32
    head = 2 * 128256 * 4096  # the LM head, on the last position only
    assert prefill_flops(LLAMA3_8B, n32) == attn32 + linear32 + head
    assert FIGURES["quadratic_attention_share_llama3_8b_32k"] == "38%"
    assert FIGURES["quadratic_attention_share_llama3_8b_1m"] == "95%"
    ratio = prefill_flops(LLAMA3_8B, n1m) / prefill_flops(LLAMA3_8B, n32)
    assert 32 < ratio < 1024
    assert FIGURES["quadratic_prefill_ratio_llama3_8b_1m_vs_32k"] == "410x"
    # The 1M cache of one sequence is more than an 80 GB GPU holds.
    assert LLAMA3_8B.kv_bytes(n1m) > 80e9
    assert FIGURES["llama3_8b_gib_1m"] == "128.00 GiB" and FIGURES["llama3_8b_gb_1m"] == "137.4 GB"


def test_naive_against_cached_counts_both_prompts() -> None:
    """Both totals count the prompt: 1,124,750 against 2,000 + 499 token-projections."""
    tight = naive_vs_cached_work(2000, 500, unused_last_step=False)
    assert tight["cached_proj"] == 3 * 2499
    assert FIGURES["naive_vs_cached_ratio_2000_500"] == "450x"
    # The first decode step faces the naive loop's second step, over 2,001 tokens.
    assert FIGURES["naive_step_ratio_2000_500_first"] == "2,001x"
    assert FIGURES["naive_step_ratio_2000_500_last"] == "2,499x"


def test_the_last_decode_step_is_never_needed() -> None:
    # The prefill yields the first of the 60 tokens; 59 decode steps yield the rest.
    lesson = naive_vs_cached_work(4, 60)
    tight = naive_vs_cached_work(4, 60, unused_last_step=False)
    assert lesson["cached_proj"] - tight["cached_proj"] == 3
    assert lesson["cached_scores"] - tight["cached_scores"] == 64  # the unused step's 64 scores
    assert (tight["cached_proj"], tight["cached_scores"]) == (189, 2022)
    assert lesson["naive_proj"] == tight["naive_proj"]


def test_gpu_sources_state_their_figures() -> None:
    """Each GPU's data-sheet line must print the peak it is the source of (no silent drift)."""
    for gpu in GPUS.values():
        dense = f"{gpu.bf16_flops / 1e12:,.0f}"
        assert dense in gpu.source, gpu.name
        bandwidth_gbs, bandwidth_tbs = (
            f"{gpu.hbm_bytes_per_s / 1e9:,.0f} GB/s",
            f"{gpu.hbm_bytes_per_s / 1e12:g}TB/s",
        )
        assert bandwidth_gbs in gpu.source or bandwidth_tbs in gpu.source, gpu.name
        assert f"{gpu.hbm_bytes // 10**9}GB" in gpu.source, gpu.name


def test_kvprep_figures_prints_the_gpu_table() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "figures"], capture_output=True, text=True, check=True
    ).stdout
    assert "h100_sxm   989 TFLOPS  3,350 GB/s  80 GB  ridge 295.2 FLOP/byte" in out
    assert "source: NVIDIA H200 Tensor Core GPU data sheet" in out
    assert "roofline_min_ms_llama2_7b_h100" in out and "3.94 ms" in out
