"""Model-side figures of the serving loop: speculative decoding, quantization, MLA, parallelism, MoE.

Merged into app.content.figures.compute_figures(); a name defined twice is an error. Names carry
their topic's prefix: spec_, quant_, mla_, parallel_, moe_.

Shapes are app.content.shapes (LATER_MODELS, each checked against its config.json on Hugging
Face, and DEEPSEEK_V3's attention and expert fields); formulas are app.content.inference_math and,
for the model-side ones only these figures state, app.content.model_math.
"""

from __future__ import annotations

from app.content import inference_math as im
from app.content.hardware import H100_SXM
from app.content.model_math import (
    E4M3,
    E5M2,
    accept_probabilities,
    best_draft_length,
    expert_capacity,
    gqa_attention_intensity,
    group_quant_bits,
    layer_params,
    mla_absorbed_flops_per_cached_token,
    mla_decompress_flops_per_cached_token,
    mla_decompressed_bytes_per_token,
    quantize_symmetric,
    residual_distribution,
    tp_kv_bytes_per_token_per_gpu,
    tp_supported,
)
from app.content.shapes import (
    DEEPSEEK_V3,
    GEMMA2_9B,
    GIB,
    KIB,
    LATER_MODELS,
    LLAMA3_8B,
    LLAMA31_70B,
    LLAMA31_405B,
    MIXTRAL_8X7B,
    QWEN25_7B,
)

GPU_80GB = H100_SXM.hbm_bytes


# ---------------------------------------------------------------- speculative decoding


def _spec_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    # The three-token worked example: target p and draft q over tokens A, B, C.
    p, q = (0.5, 0.3, 0.2), (0.2, 0.6, 0.2)
    f["spec_example_alpha"] = f"{im.acceptance_rate(p, q):.2f}"
    f["spec_example_accept_b"] = f"{accept_probabilities(p, q)[1]:.2f}"
    f["spec_example_reject"] = f"{1 - im.acceptance_rate(p, q):.2f}"
    f["spec_example_residual_a"] = f"{residual_distribution(p, q)[0]:.2f}"
    f["spec_example_target_b"] = f"{p[1]:.0%}"  # B is not the target's argmax
    for alpha, gamma in ((0.6, 4), (0.8, 2), (0.8, 4), (0.8, 8), (0.9, 4)):
        key = f"a{int(alpha * 10):02d}_g{gamma}"
        f[f"spec_tokens_{key}"] = f"{im.speculative_expected_tokens(alpha, gamma):.2f}"
    f["spec_tokens_a08_limit"] = f"{1 / (1 - 0.8):.2f}"
    # Verifying gamma = 4 drafts scores gamma + 1 positions in one target pass, against 1 for plain decode.
    f["spec_verify_work_g4"] = f"{(4 + 1) / 1:.0f}x"
    for c in (0.05, 0.1, 0.2):
        key = f"c{int(c * 100):02d}"
        best = best_draft_length(0.8, c)
        f[f"spec_best_gamma_a08_{key}"] = str(best)
        f[f"spec_speedup_a08_{key}_best"] = f"{im.speculative_walltime_speedup(0.8, best, c):.2f}x"
        f[f"spec_speedup_a08_{key}_g4"] = f"{im.speculative_walltime_speedup(0.8, 4, c):.2f}x"
    f["spec_best_gamma_a06_c05"] = str(best_draft_length(0.6, 0.05))
    f["spec_speedup_a06_c05_best"] = (
        f"{im.speculative_walltime_speedup(0.6, best_draft_length(0.6, 0.05), 0.05):.2f}x"
    )
    # Draft cost in target passes, by weight bytes read (both memory-bound at batch 1).
    target = LLAMA31_70B.matmul_params()  # bytes a step reads: not the input embedding table
    small_draft = LLAMA3_8B.matmul_params() / target
    head_and_layer = (layer_params(LLAMA31_70B) + LLAMA31_70B.vocab * LLAMA31_70B.hidden) / target
    f["spec_draft_cost_8b_for_70b"] = f"{small_draft:.1%}"
    f["spec_draft_cost_one_layer_70b"] = f"{head_and_layer:.1%}"
    f["spec_speedup_8b_draft_a08_g4"] = f"{im.speculative_walltime_speedup(0.8, 4, small_draft):.2f}x"
    f["spec_speedup_layer_draft_a08_g4"] = f"{im.speculative_walltime_speedup(0.8, 4, head_and_layer):.2f}x"
    return f


# ---------------------------------------------------------------- quantization


def _quant_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    params = LLAMA31_70B.llama_params()
    f["quant_llama31_70b_params"] = f"{params / 1e9:.2f}B"
    int4_bits = group_quant_bits(4, 128)
    f["quant_int4_g128_bits"] = f"{int4_bits:g}"
    f["quant_int4_g128_zero_bits"] = f"{group_quant_bits(4, 128, zero_bits=16):g}"
    for label, bits in (("bf16", 16.0), ("int8", 8.0), ("int4", int4_bits)):
        weight_bytes = params * bits / 8
        f[f"quant_70b_{label}_gb"] = f"{weight_bytes / 1e9:.1f} GB"
        if weight_bytes < GPU_80GB:
            # A step reads every quantized matrix but the input embedding table.
            read = (params - LLAMA31_70B.vocab * LLAMA31_70B.hidden) * bits / 8
            step = im.min_time_per_token(read, 0, H100_SXM)
            f[f"quant_70b_{label}_ms_h100"] = f"{step * 1e3:.1f} ms"
            f[f"quant_70b_{label}_tok_s_h100"] = f"{1 / step:.0f} tokens/s"
    f["quant_bf16_over_int4_bytes"] = f"{16 / int4_bits:.2f}x"
    f["quant_bf16_over_int4_naive"] = f"{16 / 4:.0f}x"  # the bit widths alone, before group scales
    f["quant_crossover_bf16_h100"] = f"{im.crossover_batch(H100_SXM, 2):.0f}"
    f["quant_crossover_int4_h100"] = f"{im.crossover_batch(H100_SXM, int4_bits / 8):.0f}"
    # Why one outlier ruins an absmax grid: four values, with and without the 12.7.
    with_outlier = (0.12, -0.26, 0.31, 12.7)
    scale, codes = quantize_symmetric(with_outlier)
    small_scale, _ = quantize_symmetric(with_outlier[:3])
    f["quant_example_scale_outlier"] = f"{scale:g}"
    f["quant_example_codes"] = ", ".join(str(c) for c in codes)
    f["quant_example_dequant"] = ", ".join(f"{c * scale:g}" for c in codes)
    f["quant_example_scale_no_outlier"] = f"{small_scale:.5f}"
    f["quant_example_step_ratio"] = f"{scale / small_scale:.0f}x"
    worst = max(abs(c * scale - v) / abs(v) for c, v in zip(codes[:3], with_outlier[:3], strict=True))
    f["quant_example_worst_relative_error"] = f"{worst:.0%}"
    for fmt in (E4M3, E5M2):
        key = fmt.name.lower()
        f[f"quant_{key}_max"] = f"{fmt.max_normal:,.0f}"
        f[f"quant_{key}_min_normal"] = f"2^{1 - fmt.bias}"
        f[f"quant_{key}_min_subnormal"] = f"2^{1 - fmt.bias - fmt.mantissa_bits}"
        f[f"quant_{key}_step_at_one"] = f"{fmt.step_at_one:g}"
        f[f"quant_{key}_bias"] = str(fmt.bias)
    # The KV cache at lower precision: Llama-3.1-70B, scale (and zero point) per group of elements.
    m = LLAMA31_70B
    bf16 = m.kv_bytes(1)
    int8 = im.quantized_kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim, 8, 128)
    int4 = im.quantized_kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim, 4, 128)
    two_bit = im.quantized_kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim, 2, 32, scale_bytes=4)
    f["quant_kv_70b_bf16_kib"] = f"{bf16 / KIB:g} KiB"
    f["quant_kv_70b_elements_per_token"] = f"{2 * m.layers * m.kv_heads * m.head_dim:,}"
    f["quant_kv_70b_int8_kib"] = f"{int8 / KIB:g} KiB"
    f["quant_kv_70b_int4_kib"] = f"{int4 / KIB:g} KiB"
    f["quant_kv_70b_2bit_kib"] = f"{two_bit / KIB:g} KiB"
    f["quant_kv_70b_2bit_ratio"] = f"{bf16 / two_bit:.2f}x"
    f["quant_kv_2bit_naive_ratio"] = f"{16 / 2:.0f}x"  # the bit widths alone, before scales and zero points
    f["quant_kv_70b_bf16_32k_gib"] = f"{bf16 * 32768 / GIB:.2f} GiB"
    f["quant_kv_70b_2bit_32k_gib"] = f"{two_bit * 32768 / GIB:.2f} GiB"
    f["quant_kv_70b_residual_128_mib"] = f"{bf16 * 128 / 2**20:g} MiB"
    return f


# ---------------------------------------------------------------- multi-head latent attention


def _mla_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    s = DEEPSEEK_V3
    mla = im.mla_bytes_per_token(s.layers, s.kv_lora_rank, s.qk_rope_head_dim, 2)
    full = mla_decompressed_bytes_per_token(s)
    f["mla_v3_elements_per_layer"] = str(s.kv_lora_rank + s.qk_rope_head_dim)
    f["mla_v3_bytes_per_token"] = f"{mla:,}"
    f["mla_v3_kib_per_token"] = f"{mla / KIB:.1f} KiB"
    f["mla_v3_decompressed_kib_per_token"] = f"{full / KIB:,.0f} KiB"
    f["mla_v3_saving_vs_decompressed"] = f"{full / mla:.1f}x"
    f["mla_v3_gqa_equivalent_groups"] = (
        f"{(s.kv_lora_rank + s.qk_rope_head_dim) / (2 * s.qk_nope_head_dim):g}"
    )
    f["mla_v3_key_dim"] = str(s.qk_nope_head_dim + s.qk_rope_head_dim)
    f["mla_v3_gib_128k"] = f"{mla * 131072 / GIB:.2f} GiB"
    for key, model in LATER_MODELS.items():
        f[f"mla_cmp_{key}_kib_per_token"] = f"{model.kv_bytes(1) / KIB:g} KiB"
    f["mla_cmp_llama31_70b_gib_128k"] = f"{LLAMA31_70B.kv_bytes(131072) / GIB:.2f} GiB"
    f["mla_cmp_llama31_405b_gib_128k"] = f"{LLAMA31_405B.kv_bytes(131072) / GIB:.2f} GiB"
    f["mla_v3_vs_70b_ratio"] = f"{LLAMA31_70B.kv_bytes(1) / mla:.1f}x"
    # Under TP the one latent per token cannot be split by heads: every rank keeps a copy.
    f["mla_v3_tp8_total_kib"] = f"{8 * mla / KIB:.1f} KiB"
    f["mla_v3_tp8_vs_gqa_per_gpu"] = f"{mla / tp_kv_bytes_per_token_per_gpu(LLAMA31_70B, 8):.2f}x"
    absorbed = mla_absorbed_flops_per_cached_token(s)
    rebuild = mla_decompress_flops_per_cached_token(s)
    latent_bytes = (s.kv_lora_rank + s.qk_rope_head_dim) * 2
    f["mla_absorbed_flops_per_token_layer"] = f"{absorbed:,} FLOPs"
    f["mla_decompress_flops_per_token_layer"] = f"{rebuild:,} FLOPs"
    f["mla_decompress_over_absorbed"] = f"{rebuild / absorbed:.0f}x"
    f["mla_decode_intensity"] = f"{absorbed / latent_bytes:.0f} FLOP/byte"
    f["mla_gqa_70b_decode_intensity"] = f"{gqa_attention_intensity(LLAMA31_70B):.0f} FLOP/byte"
    f["mla_v3_latent_bytes_per_layer"] = f"{latent_bytes:,}"
    m = LLAMA31_70B
    f["mla_gqa_70b_flops_per_token_layer"] = f"{2 * m.q_heads * 2 * m.head_dim:,}"
    f["mla_gqa_70b_bytes_per_token_layer"] = f"{2 * m.kv_heads * m.head_dim * m.bytes_per_element:,}"
    f["mla_h100_ridge"] = f"{H100_SXM.ridge_flops_per_byte:.0f}"
    return f


# ---------------------------------------------------------------- parallelism


def _parallel_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    m = LLAMA31_70B
    f["parallel_70b_allreduces_per_token"] = str(2 * m.layers)
    message = m.hidden * m.bytes_per_element
    f["parallel_70b_allreduce_kib_b1"] = f"{message / KIB:g} KiB"
    f["parallel_70b_allreduce_mib_b64"] = f"{64 * message / 2**20:g} MiB"
    f["parallel_70b_ring_sent_kib_b1_tp8"] = f"{im.ring_allreduce_bytes_per_gpu(message, 8) / KIB:g} KiB"
    f["parallel_70b_prefill_allreduce_mib_4k"] = f"{4096 * message / 2**20:g} MiB"
    for tp in (2, 4, 8, 16):
        f[f"parallel_70b_kv_heads_tp{tp}"] = str(im.kv_heads_per_gpu(m.kv_heads, tp))
        f[f"parallel_70b_kib_per_gpu_tp{tp}"] = f"{tp_kv_bytes_per_token_per_gpu(m, tp) / KIB:g} KiB"
    f["parallel_70b_total_kib_tp16"] = f"{16 * tp_kv_bytes_per_token_per_gpu(m, 16) / KIB:g} KiB"
    weights_per_gpu = m.llama_params() * 2 / 8
    f["parallel_70b_tp8_weight_read_cut"] = f"{m.llama_params() * 2 / weights_per_gpu:.0f}x"
    cache_128k_per_gpu = tp_kv_bytes_per_token_per_gpu(m, 8) * 131072
    f["parallel_70b_weights_gb_per_gpu_tp8"] = f"{weights_per_gpu / 1e9:.1f} GB"
    f["parallel_70b_128k_gib_per_gpu_tp8"] = f"{cache_128k_per_gpu / GIB:.2f} GiB"
    f["parallel_70b_128k_seqs_tp8"] = str(
        im.sequences_that_fit(GPU_80GB - weights_per_gpu, cache_128k_per_gpu)
    )
    q = QWEN25_7B
    f["parallel_qwen_kib_per_token"] = f"{q.kv_bytes(1) / KIB:g} KiB"
    f["parallel_qwen_kib_per_gpu_tp4"] = f"{tp_kv_bytes_per_token_per_gpu(q, 4) / KIB:g} KiB"
    f["parallel_qwen_tp_options"] = ", ".join(str(t) for t in range(1, 29) if tp_supported(q, t))
    f["parallel_gemma_total_kib_tp16"] = f"{16 * tp_kv_bytes_per_token_per_gpu(GEMMA2_9B, 16) / KIB:g} KiB"
    f["parallel_gemma_kib_per_token"] = f"{GEMMA2_9B.kv_bytes(1) / KIB:g} KiB"
    big = LLAMA31_405B
    f["parallel_405b_params"] = f"{big.llama_params() / 1e9:.1f}B"
    f["parallel_405b_bf16_gb"] = f"{big.llama_params() * 2 / 1e9:.0f} GB"
    f["parallel_405b_fp8_gb"] = f"{big.llama_params() / 1e9:.0f} GB"
    f["parallel_8x80_gb"] = f"{8 * GPU_80GB / 1e9:.0f} GB"
    f["parallel_405b_kib_per_gpu_tp8"] = f"{tp_kv_bytes_per_token_per_gpu(big, 8) / KIB:g} KiB"
    for p, micro in ((4, 4), (4, 16), (2, 2), (2, 8)):
        f[f"parallel_bubble_p{p}_m{micro}"] = f"{im.pipeline_bubble_fraction(p, micro):.1%}"
    s = DEEPSEEK_V3
    f["parallel_v3_moe_layers"] = str(s.layers - s.dense_layers)
    f["parallel_v3_experts_per_gpu_ep32"] = str(s.routed_experts // 32)
    dispatch = s.experts_per_token * s.hidden * 1  # FP8 activations sent to each chosen expert
    combine = s.experts_per_token * s.hidden * 2  # BF16 expert outputs sent back
    f["parallel_v3_dispatch_kib_per_token"] = f"{dispatch / KIB:g} KiB"
    f["parallel_v3_combine_kib_per_token"] = f"{combine / KIB:g} KiB"
    per_token_all_layers = (dispatch + combine) * (s.layers - s.dense_layers)
    f["parallel_v3_a2a_mib_per_token"] = f"{per_token_all_layers / 2**20:.2f} MiB"
    return f


# ---------------------------------------------------------------- mixture of experts


def _moe_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    d = MIXTRAL_8X7B.hidden
    total, active = im.moe_params(
        layers=MIXTRAL_8X7B.layers,
        attention_params=layer_params(MIXTRAL_8X7B)
        - 3 * d * MIXTRAL_8X7B.intermediate,  # attention and norms
        expert_params=3 * d * MIXTRAL_8X7B.intermediate,
        embedding_params=2 * MIXTRAL_8X7B.vocab * d + d,  # untied embedding and LM head, final norm
        router_params=d * 8,
        experts=8,
        top_k=2,
    )
    f["moe_mixtral_total_params"] = f"{total / 1e9:.1f}B"
    f["moe_mixtral_active_params"] = f"{active / 1e9:.1f}B"
    f["moe_mixtral_active_share"] = f"{active / total:.0%}"
    f["moe_mixtral_total_over_active"] = f"{total / active:.1f}x"
    f["moe_mixtral_bf16_gb"] = f"{total * 2 / 1e9:.1f} GB"
    f["moe_mixtral_active_bf16_gb"] = f"{active * 2 / 1e9:.1f} GB"
    f["moe_mixtral_gflop_per_token"] = f"{im.matmul_flops(active, 1) / 1e9:.1f} GFLOP"
    f["moe_mixtral_dense_gflop_per_token"] = f"{im.matmul_flops(total, 1) / 1e9:.1f} GFLOP"
    expert = 3 * MIXTRAL_8X7B.hidden * MIXTRAL_8X7B.intermediate
    f["moe_mixtral_expert_params"] = f"{expert / 1e6:.0f}M"
    for batch in (1, 4, 8, 16, 32):
        f[f"moe_mixtral_experts_touched_b{batch}"] = f"{im.expected_experts_touched(8, 2, batch):.2f}"
    # Weight bytes a decode step reads at batch b: the non-expert weights plus the experts touched.
    shared = active - 2 * expert * MIXTRAL_8X7B.layers
    for batch in (1, 32):
        touched = im.expected_experts_touched(8, 2, batch)
        step_bytes = (shared + touched * expert * MIXTRAL_8X7B.layers) * 2
        f[f"moe_mixtral_step_gb_b{batch}"] = f"{step_bytes / 1e9:.1f} GB"
    per_expert = im.crossover_batch(H100_SXM, 2)
    f["moe_h100_tokens_per_expert"] = f"{per_expert:.0f}"
    f["moe_mixtral_crossover_batch"] = f"{per_expert * 8 / 2:,.0f}"
    v3 = DEEPSEEK_V3
    f["moe_v3_crossover_batch"] = f"{per_expert * v3.routed_experts / v3.experts_per_token:,.0f}"
    f["moe_v3_tokens_per_expert_b256"] = f"{256 * v3.experts_per_token / v3.routed_experts:g}"
    capacity_factor = 1.25
    f["moe_capacity_4096_cf125"] = f"{expert_capacity(4096, 2, 8, capacity_factor):,}"
    f["moe_capacity_cf125_headroom"] = f"{capacity_factor - 1:.0%}"
    # Each expert gets top_k / experts of the batch, so it reaches a dense layer's per-matmul rows
    # only at experts / top_k times the batch.
    f["moe_mixtral_batch_factor_per_expert"] = f"{8 / 2:.0f}x"
    # The name "8x7B" multiplied out: what candidates say, against the 46.7B actually stored.
    f["moe_mixtral_naive_params"] = f"{MIXTRAL_8X7B.n_experts * 7}B"
    f["moe_mean_load_4096"] = f"{4096 * 2 // 8:,}"
    return f


def figures() -> dict[str, str]:
    """name -> the exact text a card must print for that figure."""
    f: dict[str, str] = {}
    for part in (_spec_figures, _quant_figures, _mla_figures, _parallel_figures, _moe_figures):
        f.update(part())
    return f
