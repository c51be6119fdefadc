"""The kernel and cache-manager figures against values worked by hand."""

from __future__ import annotations

from app.content import figures_kernels as fk
from app.content.shapes import LLAMA3_8B

F = fk.figures()


def test_every_name_has_a_topic_prefix() -> None:
    prefixes = ("swa_", "sinks_", "longctx_", "sampling_", "fa2_", "fa3_", "flashdec_", "paged_")
    prefixes += ("prefix_", "sched_", "evict_", "batchinv_", "mask_")
    assert all(name.startswith(prefixes) for name in F)


def test_sliding_windows() -> None:
    # 32 layers x 4,096 window; 32,768 / 4,096 = 8 times fewer cached tokens.
    assert F["swa_mistral_reach"] == "131,072"
    assert F["swa_mistral_saving_32k"] == "8x"
    # 128 KiB x 32,768 tokens x 32 sequences = 128 GiB; the window keeps 4,096 tokens.
    assert F["swa_mistral_gib_32k_x32_full"] == "128.00 GiB"
    assert F["swa_mistral_gib_32k_x32_rolled"] == "16.00 GiB"
    assert F["swa_rolling_slot_10000"] == "1,808"  # 10,000 - 2 x 4,096
    # Llama-2-7B: 512 KiB a token; 4 sinks are 2 MiB, 2,048 tokens 1 GiB.
    assert F["sinks_llama2_7b_sink_mib"] == "2 MiB"
    assert F["sinks_llama2_7b_gib_2048"] == "1.00 GiB"


def test_gemma2_hybrid_cache() -> None:
    # 2 x 42 x 8 x 256 x 2 = 344,064 bytes = 336 KiB a token.
    assert F["swa_gemma2_9b_kib_per_token"] == "336 KiB"
    # 344,064 x 8,192 = 2.625 GiB; local layers hold half the tokens: 0.75 x 2.625 = 1.97.
    assert F["swa_gemma2_9b_gib_8k_global"] == "2.62 GiB"
    assert F["swa_gemma2_9b_gib_8k_hybrid"] == "1.97 GiB"
    assert F["swa_gemma2_9b_saving_8k"] == "25%"
    # (32,768 + 5 x 1,024) / (6 x 32,768) = 0.193.
    assert F["swa_five_to_one_share_32k"] == "19%"


def test_llama31_rope_scaling_pairs() -> None:
    # Wavelength 2 pi 500000^(2i/128) < 2,048 for i <= 28 (i = 28: 1,956; i = 29: 2,402),
    # > 8,192 from i = 35 (i = 34: 6,695; i = 35: 8,219): 29 kept, 29 divided by 8, 6 blended.
    assert (F["longctx_llama31_pairs_unchanged"], F["longctx_llama31_pairs_scaled"]) == ("29", "29")
    assert F["longctx_llama31_pairs_blended"] == "6"
    assert F["longctx_llama31_high_wavelen"] == "2,048"
    assert F["longctx_llama31_factor_x_original"] == "65,536"


def test_rope_stretching() -> None:
    # 10,000 x 4^(128/126) = 10,000 x 4.0890; YaRN 0.1 ln 16 + 1 = 1.2773.
    assert F["longctx_ntk_base_s4"] == "40,890"
    assert F["longctx_pi_position_16000_s4"] == "4,000"
    assert F["longctx_yarn_scale_s16"] == "1.277"
    assert F["longctx_yarn_scale_s8"] == "1.208"


def test_long_context_cost() -> None:
    # 128 KiB x 131,072 = 16 GiB; 70B 320 KiB -> 40 GiB; 405B 504 KiB -> 63 GiB.
    assert F["longctx_llama31_8b_gib_128k"] == "16.00 GiB"
    assert F["longctx_llama31_70b_gib_128k"] == "40.00 GiB"
    assert F["longctx_llama31_405b_gib_128k"] == "63.00 GiB"
    # 8.03B minus two 128,256 x 4,096 embedding tables (and a norm) = 6.98B in the layers.
    assert F["longctx_llama31_8b_layer_params"] == "6.98B"
    # At n = 131,072: attention 2 x 32 x 4,096 x n^2 = 4.50e15, layers 2 x 6.98e9 x n = 1.83e15.
    assert F["longctx_attn_share_128k"] == "71%"
    assert F["longctx_attn_share_8k"] == "13%"
    assert F["longctx_prefill_s_128k_h100"] == "6.4 s"  # 6.33e15 / 989e12
    assert F["longctx_prefill_ms_8k_h100"] == "133 ms"
    # 15.01 GB of weights read (not the input embedding table) / 3.35 TB/s; plus 17.18 GB of
    # cache at 128K.
    assert F["longctx_decode_ms_short_h100"] == "4.48 ms"
    assert F["longctx_decode_ms_128k_h100"] == "9.61 ms"


def test_sampling_example() -> None:
    # exp([3, 2, 1, 0.5, -1]) = 20.09, 7.39, 2.72, 1.65, 0.37; sum 32.21.
    assert F["sampling_probs_t1"] == "0.62, 0.23, 0.08, 0.05, 0.01"
    assert F["sampling_probs_t2"] == "0.42, 0.25, 0.15, 0.12, 0.06"
    # Nucleus 0.9: 0.62 + 0.23 = 0.85 < 0.9, + 0.08 = 0.94 -> 3 tokens; flatter at T = 2 -> 4.
    assert (F["sampling_top_p09_t1"], F["sampling_top_p09_t05"], F["sampling_top_p09_t2"]) == ("3", "2", "4")
    # Min-p 0.1: threshold 0.062 keeps 0.62, 0.23, 0.08; at T = 2, 0.042 keeps all five.
    assert F["sampling_min_p01_threshold_t1"] == "0.062"
    assert (F["sampling_min_p01_t1"], F["sampling_min_p01_t2"], F["sampling_min_p01_t05"]) == ("3", "5", "2")
    assert F["sampling_top_k2_first"] == "0.73"  # 20.09 / (20.09 + 7.39)
    assert (F["sampling_rep_pos"], F["sampling_rep_neg"]) == ("1.67", "-1.20")
    assert F["sampling_freq_pres"] == "0.60"  # 2.0 - 3 x 0.3 - 0.5


def test_beam_cache() -> None:
    # 6,000 tokens x 128 KiB = 750 MiB; (1,000 + 2,000) x 128 KiB = 375 MiB.
    assert F["sampling_beam4_mib_copied"] == "750 MiB"
    assert F["sampling_beam4_mib_shared"] == "375 MiB"


def test_flashattention_ratios() -> None:
    # 312 / 19.5 = 16; 989 / 3.9 = 253.6; 225 / 312 = 0.721; 740 / 989 = 0.748.
    assert F["fa2_a100_matmul_vs_scalar"] == "16x"
    assert F["fa3_h100_matmul_vs_exp"] == "254x"
    assert F["fa2_a100_training_mfu"] == "72%"
    assert F["fa3_h100_fp16_util"] == "75%"


def test_flash_decoding_occupancy_and_bytes() -> None:
    # 32 heads on 132 SMs; ceil(132 / 32) = 5 splits; 128 KiB x 65,536 = 8 GiB at 3.35 TB/s.
    assert F["flashdec_sm_share_b1"] == "24%"
    assert F["flashdec_min_splits_b1"] == "5"
    assert F["flashdec_llama3_8b_gib_64k"] == "8.00 GiB"
    assert F["flashdec_read_ms_64k_h100"] == "2.56 ms"  # 8,589,934,592 / 3.35e12
    assert F["paged_v2_partitions_64k"] == "128"


def test_log_sum_exp_merge_by_hand() -> None:
    # log(e + e^2) = 2.3133; log(e^3 + e^4) = 4.3133; outputs 10 x 0.269 + 20 x 0.731 = 17.31.
    assert (F["flashdec_lse_split1"], F["flashdec_lse_split2"]) == ("2.313", "4.313")
    assert (F["flashdec_out_split1"], F["flashdec_out_split2"]) == ("17.31", "37.31")
    # log(e^2.3133 + e^4.3133) = 4.4402; weights 1 / (1 + e^2) = 0.119 and 0.881.
    assert F["flashdec_lse_merged"] == "4.440"
    assert (F["flashdec_weight_split1"], F["flashdec_weight_split2"]) == ("0.119", "0.881")
    # One softmax over [1, 2, 3, 4]: 0.032, 0.087, 0.237, 0.644 -> 34.93.
    assert F["flashdec_out_merged"] == "34.93"


def test_paged_blocks() -> None:
    # 16 tokens x 2 x 8 x 128 x 2 bytes = 64 KiB a layer; x 32 layers = 2 MiB; 15 tokens = 1.875.
    assert F["paged_llama3_8b_block_layer_kib"] == "64 KiB"
    assert F["paged_llama3_8b_block_mib"] == "2 MiB"
    assert F["paged_llama3_8b_worst_waste_mib"] == "1.88 MiB"
    assert F["paged_blocks_4096"] == "256"


def test_prefix_cache_figures() -> None:
    # 1,000 // 16 = 62 full blocks = 992 tokens; 8 left in a partial block.
    assert (F["prefix_reused_1000_b16"], F["prefix_recomputed_1000_b16"]) == ("992", "8")
    # 2,048 x 128 KiB = 256 MiB; 64 copies = 16 GiB.
    assert F["prefix_sys_2048_mib"] == "256 MiB"
    assert F["prefix_sys_2048_x64_gib"] == "16.00 GiB"
    # Cold: 2 x 6.98e9 x 4,000 + 2 x 32 x 4,096 x 4,000^2 = 6.00e13 FLOPs -> 60.7 ms at 989 TFLOPS.
    # Warm: 2 x 6.98e9 x 1,000 + 2 x 32 x 4,096 x (4,000^2 - 3,000^2) = 1.58e13 -> 16.0 ms.
    assert F["prefix_prefill_ms_4000_cold"] == "60.7 ms"
    assert F["prefix_prefill_ms_4000_warm"] == "16.0 ms"
    assert F["prefix_prefill_speedup_4000_3000"] == "3.8x"
    assert (F["prefix_hit_rate_4000_3000"], F["prefix_naive_speedup_4000_3000"]) == ("75%", "4x")


def test_prefill_flops_counts_only_new_tokens_but_all_keys() -> None:
    cold = fk.prefill_flops(LLAMA3_8B, 4000)
    warm = fk.prefill_flops(LLAMA3_8B, 4000, cached=3000)
    assert fk.prefill_flops(LLAMA3_8B, 4000, cached=0) == cold
    assert 3 < cold / warm < 4  # the new queries still attend to the cached keys


def test_scheduling_figures() -> None:
    # 0.9 x 80e9 - 2 x 8,030,261,248 = 55.94e9 bytes; / 2 MiB blocks = 26,674; x 16 tokens.
    assert F["sched_llama3_8b_h100_kv_gb"] == "55.9 GB"
    assert F["sched_llama3_8b_weights_gb"] == "16.1 GB"
    assert F["sched_llama3_8b_h100_free_gb"] == "63.9 GB"  # 80e9 - 16.06e9
    assert F["sched_llama3_8b_h100_blocks"] == "26,674"
    assert F["sched_llama3_8b_h100_tokens"] == "426,784"
    assert F["sched_llama3_8b_h100_seqs_4k"] == "104"  # 426,784 / 4,096 = 104.2
    # 0.5 GiB over 64 GB/s = 8.39 ms; 2 x 6.98e9 x 4,096 + 2 x 32 x 4,096 x 4,096^2 = 6.16e13 FLOPs.
    assert F["sched_swap_ms_4k"] == "8.4 ms"
    assert F["sched_recompute_ms_4k"] == "62.3 ms"
    assert F["evict_llama3_8b_gib_16k"] == "2.00 GiB"
    assert F["evict_llama3_8b_gib_16k_20pct"] == "0.40 GiB"
    assert F["evict_llama3_8b_mib_1024"] == "128 MiB"
    # float32 spacing at 1e8 is 8, so 1e8 + 1 rounds back to 1e8.
    assert (F["batchinv_fp32_left"], F["batchinv_fp32_right"]) == ("0.0", "1.0")


def test_mask_numerics() -> None:
    # fp16: 5 exponent bits, largest finite (2 - 2^-10) x 2^15 = 65,504; ulp there is 32.
    assert F["mask_fp16_min"] == "-65,504"
    assert F["mask_fp16_of_minus_1e9"] == "-inf"
    assert F["mask_fp16_min_twice"] == "-inf"
    # -65,520 is the halfway point to overflow and rounds to even (-inf); -65,519 rounds back.
    assert F["mask_fp16_min_minus_16"] == "-inf"
    assert F["mask_fp16_min_minus_15"] == "-65,504"
    assert F["mask_fp16_exp_limit"] == "11.09"  # ln 65,504
    assert F["mask_bf16_min"] == "-3.39e+38"  # (2 - 2^-7) x 2^127


def test_long_context_on_a_24gb_card() -> None:
    # 0.9 x 24e9 - 16.06e9 = 5.54e9 bytes = 2,641 blocks of 2 MiB = 42,256 tokens; fp8 halves a block.
    assert F["longctx_24gb_pool_gb"] == "5.5 GB"
    assert F["longctx_24gb_max_tokens"] == "42,256"
    assert F["longctx_24gb_max_tokens_fp8"] == "84,512"
