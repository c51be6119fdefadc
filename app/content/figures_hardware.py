"""Roofline figures: ridge points, minimum time per output token, crossover batch sizes, MBU/MFU,
the cache and weight sizes of the later model configs, and the derived figures of the cards
this area owns (roofline, batching against bandwidth, long-context cache levers, request
latency, attention's share of prefill, RoPE wavelengths).

Merged into app.content.figures.compute_figures(); a name defined twice is an error. Every
number comes from the GPU data sheets (app/content/hardware.py), the model shapes
(app/content/figures.py) and the formulas (app/content/inference_math.py). Weights are in bf16
(2 bytes per parameter) unless a name says otherwise; sizes in GB are decimal, like the data
sheets' bandwidths, so that bytes / bandwidth needs no conversion.
"""

from __future__ import annotations

import math

from app.content import inference_math as im
from app.content.hardware import GPUS, H100_SXM
from app.content.shapes import (
    DEEPSEEK_V3,
    GIB,
    KIB,
    LATER_MODELS,
    LLAMA2_7B,
    LLAMA3_8B,
    LLAMA31_70B,
    LLAMA31_405B,
    MODELS,
    ModelShape,
)

MISTRAL_WINDOW = 4096  # mistralai/Mistral-7B-v0.1 config.json: sliding_window

GPU_SHORT = {"a100_80gb": "a100", "h100_sxm": "h100", "h200_sxm": "h200"}

# Models whose batch-1 decode bound is quoted per GPU: the dense ones that fit on one 80 GB card.
BATCH1_MODELS: dict[str, ModelShape] = {
    "llama2_7b": LLAMA2_7B,
    "llama3_8b": LLAMA3_8B,
    "qwen25_7b": LATER_MODELS["qwen25_7b"],
    "gemma2_9b": LATER_MODELS["gemma2_9b"],
}

# Worked MBU/MFU examples: a measured speed is an assumption the card states, the
# utilisation is what follows from it.
MBU_EXAMPLE_TOKENS_PER_S = 150  # Llama-2-7B at batch 1 on one H100
MFU_EXAMPLE_PROMPT, MFU_EXAMPLE_SECONDS = 4096, 0.150  # Llama-3-8B prefill on one H100


def _count(n: float) -> str:
    return f"{int(n):,}"


def weight_bytes(model: ModelShape, bytes_per_param: float = 2) -> float:
    """The weights' memory footprint: every parameter, the input embedding table included."""
    return model.dense_params() * bytes_per_param


def read_bytes(model: ModelShape, bytes_per_param: float = 2) -> float:
    """The weight bytes a decode step (or a prefill) reads: all but the input embedding table."""
    return model.decode_read_bytes(bytes_per_param)


def attention_prefill_flops(model: ModelShape, tokens: int) -> float:
    """Scores and weighted sum of a causal prefill: 2 matmuls x 2 FLOPs x n^2/2 pairs x width, per layer."""
    return 2 * tokens * tokens * model.q_heads * model.head_dim * model.layers


def prefill_flops(model: ModelShape, tokens: int) -> float:
    """Whole-model prefill on the bank's one convention (ModelShape.prefill_flops): the layers
    for every prompt token, causal attention, and the LM head on the last position only."""
    return model.prefill_flops(tokens)


def figures() -> dict[str, str]:
    """name -> the exact text a card must print for that figure."""
    f: dict[str, str] = {}
    for key, gpu in GPUS.items():
        short = GPU_SHORT[key]
        f[f"roofline_ridge_{short}"] = f"{gpu.ridge_flops_per_byte:.0f} FLOP/byte"
        for dtype, bpp in (("bf16", 2), ("int8", 1), ("int4", 0.5)):
            f[f"roofline_crossover_{short}_{dtype}"] = f"{im.crossover_batch(gpu, bpp):.0f} sequences"
        f[f"roofline_{short}_hbm_gib"] = f"{gpu.hbm_bytes / GIB:.1f} GiB"
    f["roofline_h100_vs_a100_flops"] = f"{H100_SXM.bf16_flops / GPUS['a100_80gb'].bf16_flops:.1f}x"
    f["roofline_h100_vs_a100_bandwidth"] = (
        f"{H100_SXM.hbm_bytes_per_s / GPUS['a100_80gb'].hbm_bytes_per_s:.1f}x"
    )
    f["roofline_h200_vs_h100_bandwidth"] = (
        f"{GPUS['h200_sxm'].hbm_bytes_per_s / H100_SXM.hbm_bytes_per_s:.2f}x"
    )
    f["roofline_decode_intensity_b1_bf16"] = f"{im.decode_intensity(1, 2):.0f} FLOP/byte"
    f["roofline_decode_intensity_b64_bf16"] = f"{im.decode_intensity(64, 2):.0f} FLOP/byte"
    f["roofline_decode_intensity_b1_int4"] = f"{im.decode_intensity(1, 0.5):.0f} FLOP/byte"

    # The lower bound on time per output token at batch 1: every weight read once per step.
    for key, model in BATCH1_MODELS.items():
        weights = read_bytes(model)
        f[f"{key}_params_dense"] = f"{model.dense_params() / 1e9:.2f}B"
        f[f"{key}_weights_gb_bf16"] = f"{weight_bytes(model) / 1e9:.2f} GB"
        f[f"{key}_read_gb_bf16"] = f"{weights / 1e9:.2f} GB"
        for gkey, gpu in GPUS.items():
            short = GPU_SHORT[gkey]
            seconds = im.min_time_per_token(weights, 0, gpu)
            f[f"roofline_min_ms_{key}_{short}"] = f"{seconds * 1e3:.2f} ms"
            f[f"roofline_max_tps_{key}_{short}"] = (
                f"{math.floor(im.max_tokens_per_second_batch1(weights, gpu))} tokens/s"
            )
    llama2_weights = read_bytes(LLAMA2_7B)
    f["roofline_llama2_7b_int4_weights_gb"] = f"{weight_bytes(LLAMA2_7B, 0.5) / 1e9:.2f} GB"
    f["roofline_min_ms_llama2_7b_h100_int4"] = (
        f"{im.min_time_per_token(read_bytes(LLAMA2_7B, 0.5), 0, H100_SXM) * 1e3:.2f} ms"
    )
    # A long cache adds its own read to every step: Llama-2-7B (MHA) at 32,768 tokens.
    cache_32k = LLAMA2_7B.kv_bytes(32768)
    f["roofline_llama2_7b_cache_gb_32k"] = f"{cache_32k / 1e9:.2f} GB"
    f["roofline_min_ms_llama2_7b_h100_32k"] = (
        f"{im.min_time_per_token(llama2_weights, cache_32k, H100_SXM) * 1e3:.2f} ms"
    )
    llama3_weights = read_bytes(LLAMA3_8B)
    cache_8b_32k = LLAMA3_8B.kv_bytes(32768)
    f["roofline_llama3_8b_cache_gb_32k"] = f"{cache_8b_32k / 1e9:.2f} GB"
    f["roofline_min_ms_llama3_8b_h100_32k"] = (
        f"{im.min_time_per_token(llama3_weights, cache_8b_32k, H100_SXM) * 1e3:.2f} ms"
    )
    cache_8b_1m = LLAMA3_8B.kv_bytes(2**20)
    f["llama3_8b_gib_1m"] = f"{cache_8b_1m / GIB:.2f} GiB"
    f["llama3_8b_gb_1m"] = f"{cache_8b_1m / 1e9:.1f} GB"

    # A 70B model does not fit one 80 GB GPU in bf16; eight H100s share the weight read.
    weights_70b = weight_bytes(LLAMA31_70B)
    f["llama31_70b_params_dense"] = f"{LLAMA31_70B.dense_params() / 1e9:.2f}B"
    f["llama31_70b_weights_gb_bf16"] = f"{weights_70b / 1e9:.1f} GB"
    read_70b = read_bytes(LLAMA31_70B)
    f["roofline_min_ms_llama31_70b_8xh100"] = f"{read_70b / (8 * H100_SXM.hbm_bytes_per_s) * 1e3:.2f} ms"

    # Batch sizes: the intensity a batch reaches, and the time bound where decode turns compute-bound.
    crossover = math.ceil(im.crossover_batch(H100_SXM, 2))
    f["roofline_crossover_h100_bf16_ceil"] = f"{crossover} sequences"
    f["roofline_step_ms_llama2_7b_h100_at_crossover"] = (
        f"{im.compute_time(im.matmul_flops(LLAMA2_7B.matmul_params(), crossover), H100_SXM) * 1e3:.2f} ms"
    )

    # Decode and prefill of Llama-3-8B on the H100 roofline.
    decode_flops = im.matmul_flops(LLAMA3_8B.matmul_params(), 1)
    f["roofline_decode_compute_us_llama3_8b_h100"] = f"{im.compute_time(decode_flops, H100_SXM) * 1e6:.1f} us"
    decode_share = im.compute_time(decode_flops, H100_SXM) / (llama3_weights / H100_SXM.hbm_bytes_per_s)
    llama2_decode = im.matmul_flops(LLAMA2_7B.matmul_params(), 1)
    llama2_decode_s = im.compute_time(llama2_decode, H100_SXM)
    f["roofline_decode_compute_us_llama2_7b_h100"] = f"{llama2_decode_s * 1e6:.1f} us"
    f["roofline_decode_mfu_b1_llama3_8b_h100"] = f"{decode_share:.1%}"
    f["roofline_prefill_intensity_4k_bf16"] = f"{im.decode_intensity(MFU_EXAMPLE_PROMPT, 2):,.0f} FLOP/byte"
    f["roofline_prefill_weight_read_ms_llama3_8b_h100"] = (
        f"{llama3_weights / H100_SXM.hbm_bytes_per_s * 1e3:.2f} ms"
    )

    # Throughput against batch for Llama-3-8B with 4,096-token sequences on one H100 (bandwidth bound):
    # each step reads the weights once and every sequence's own cache.
    cache_4k = LLAMA3_8B.kv_bytes(4096)
    for batch in (1, 32, 64, 119):
        step = im.min_time_per_token(llama3_weights, batch * cache_4k, H100_SXM)
        f[f"batching_step_ms_llama3_8b_4k_b{batch}"] = f"{step * 1e3:.2f} ms"
        f[f"batching_tps_llama3_8b_4k_b{batch}"] = f"{math.floor(batch / step):,} tokens/s"
        f[f"batching_user_tps_llama3_8b_4k_b{batch}"] = f"{math.floor(1 / step):,} tokens/s"
    f["batching_tps_ceiling_llama3_8b_4k"] = f"{math.floor(H100_SXM.hbm_bytes_per_s / cache_4k):,} tokens/s"
    f["batching_compute_ms_llama3_8b_b119"] = (
        f"{im.compute_time(im.matmul_flops(LLAMA3_8B.matmul_params(), 119), H100_SXM) * 1e3:.2f} ms"
    )

    # MBU and MFU worked examples (assumed measurements, stated on the card).
    achieved = MBU_EXAMPLE_TOKENS_PER_S * llama2_weights
    f["roofline_mbu_example_tps"] = f"{MBU_EXAMPLE_TOKENS_PER_S} tokens/s"
    f["roofline_mbu_example_gb_per_s"] = f"{achieved / 1e9:,.0f} GB/s"
    f["roofline_mbu_example"] = f"{im.mbu(achieved, H100_SXM):.0%}"
    flops = prefill_flops(LLAMA3_8B, MFU_EXAMPLE_PROMPT)
    f["roofline_mfu_example_tflop"] = f"{flops / 1e12:.1f} TFLOP"
    f["roofline_mfu_example_ms"] = f"{MFU_EXAMPLE_SECONDS * 1e3:.0f} ms"
    f["roofline_mfu_example"] = f"{im.mfu(flops / MFU_EXAMPLE_SECONDS, H100_SXM):.0%}"
    f["roofline_prefill_ms_llama3_8b_4k_h100"] = f"{im.compute_time(flops, H100_SXM) * 1e3:.1f} ms"

    # Cache bytes per token of the later configs (bf16), and at their long contexts.
    # Each at its config's max_position_embeddings (Qwen2.5-7B and Mixtral 32,768; Gemma-2 8,192;
    # Llama-3.1 131,072).
    contexts = {"qwen25_7b": 32768, "gemma2_9b": 8192, "mixtral_8x7b": 32768}
    for key, model in LATER_MODELS.items():
        f[f"{key}_kib_per_token"] = f"{model.kv_bytes(1) / KIB:g} KiB"
        tokens = contexts.get(key, 131072)
        f[f"{key}_gib_{tokens // 1024}k"] = f"{model.kv_bytes(tokens) / GIB:.2f} GiB"
    v3 = DEEPSEEK_V3
    v3_bytes = im.mla_bytes_per_token(v3.layers, v3.kv_lora_rank, v3.qk_rope_head_dim, 2)
    f["deepseek_v3_bytes_per_token"] = f"{v3_bytes:,}"

    # Long contexts on eight H100s: Llama-3.1-70B at 131,072 tokens, bf16 and int8 caches.
    node_bytes = 8 * H100_SXM.hbm_bytes
    free_node = node_bytes - weights_70b
    seq_128k = LLAMA31_70B.kv_bytes(131072)
    int8_per_token = im.quantized_kv_bytes_per_token(
        LLAMA31_70B.layers, LLAMA31_70B.kv_heads, LLAMA31_70B.head_dim, 8, 128
    )
    f["levers_node_free_gb_llama31_70b_8xh100"] = f"{free_node / 1e9:.0f} GB"
    f["levers_llama31_70b_gb_128k"] = f"{seq_128k / 1e9:.1f} GB"
    f["levers_llama31_70b_seqs_128k_8xh100"] = _count(free_node // seq_128k)
    f["levers_llama31_70b_int8_gb_128k"] = f"{int8_per_token * 131072 / 1e9:.1f} GB"
    f["levers_llama31_70b_int8_seqs_128k_8xh100"] = _count(free_node // (int8_per_token * 131072))
    f["levers_llama31_70b_weights_gb_per_gpu_tp8"] = f"{weights_70b / 8 / 1e9:.1f} GB"
    f["levers_llama31_70b_gib_128k_per_gpu_tp8"] = f"{seq_128k / 8 / GIB:.2f} GiB"
    freed = weights_70b - weight_bytes(LLAMA31_70B, 0.5)
    f["levers_llama31_70b_int4_frees_gb"] = f"{freed / 1e9:.0f} GB"
    f["levers_llama31_70b_int4_extra_seqs_128k"] = _count(
        (free_node + freed) // seq_128k - free_node // seq_128k
    )
    f["levers_llama31_70b_seqs_8k_8xh100"] = _count(free_node // LLAMA31_70B.kv_bytes(8192))

    # Latency of one request on one H100, Llama-3-8B in bf16, at the bandwidth and compute bounds.
    for label, prompt, answer in (("4k_512", 4096, 512), ("32k_64", 32768, 64)):
        prefill = im.compute_time(prefill_flops(LLAMA3_8B, prompt), H100_SXM)
        decode = sum(
            im.min_time_per_token(llama3_weights, LLAMA3_8B.kv_bytes(prompt + i), H100_SXM)
            for i in range(1, answer)
        )
        f[f"latency_prefill_ms_llama3_8b_{label}"] = f"{prefill * 1e3:.0f} ms"
        f[f"latency_decode_s_llama3_8b_{label}"] = f"{decode:.2f} s"
        f[f"latency_total_s_llama3_8b_{label}"] = f"{prefill + decode:.2f} s"
        f[f"latency_prefill_share_llama3_8b_{label}"] = f"{prefill / (prefill + decode):.0%}"

    # The prompt length at which causal attention's FLOPs equal the weight matmuls' in prefill:
    # 2 n^2 (q_heads x head_dim) layers = 2 x params x n, so n = params / (q width x layers).
    equal_models = {"llama2_7b": LLAMA2_7B, "llama3_8b": LLAMA3_8B, "llama31_70b": LLAMA31_70B}
    for key, model in (equal_models | {"llama31_405b": LLAMA31_405B}).items():
        n_equal = model.matmul_params() / (model.q_heads * model.head_dim * model.layers)
        f[f"quadratic_equal_length_{key}"] = f"{n_equal:,.0f}"
        if key == "llama2_7b":
            f["quadratic_matmul_over_attention_llama2_7b_4k"] = (
                f"{n_equal / 4096:.0f}x"  # N / (n d L) at 4,096
            )

    # RoPE's wavelengths: pair i turns by theta^(-2i/d) radians per position, so its wavelength is
    # 2 pi theta^(2i/d) tokens; Llama 2 uses rope_theta 10,000 and Llama 3 500,000 (head_dim 128).
    f["rope_fastest_wavelength"] = f"{2 * math.pi:.2f}"
    for key, theta in (("llama2", 10_000), ("llama3", 500_000)):
        slowest = 2 * math.pi * theta ** ((128 - 2) / 128)
        f[f"rope_slowest_wavelength_{key}"] = f"{slowest:,.0f}"
    f["rope_pairs_per_head_128"] = f"{128 // 2}"

    # Mistral 7B's sliding window reaches back layers x window tokens through the stack.
    mistral = MODELS["mistral_7b"]
    f["mistral_7b_window_reach"] = f"{mistral.layers * MISTRAL_WINDOW:,}"

    # Whole-model prefill of Llama-3-8B at 32k and 1M tokens: attention's share and the ratio.
    n32k, n1m = 32768, 2**20
    lengths: tuple[tuple[str, int], ...] = (("32k", n32k), ("1m", n1m))
    for label, n in lengths:
        share = attention_prefill_flops(LLAMA3_8B, n) / prefill_flops(LLAMA3_8B, n)
        f[f"quadratic_attention_share_llama3_8b_{label}"] = f"{share:.0%}"
    ratio = prefill_flops(LLAMA3_8B, n1m) / prefill_flops(LLAMA3_8B, n32k)
    f["quadratic_prefill_ratio_llama3_8b_1m_vs_32k"] = f"{ratio:.0f}x"
    return f
