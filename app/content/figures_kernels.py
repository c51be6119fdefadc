"""Kernel and cache-manager figures: sliding windows and sinks, long context, sampling,
FlashAttention-2/3 and Flash-Decoding, prefix caching, scheduling and preemption, attention masks.

Merged into app.content.figures.compute_figures(); a name defined twice is an error. Every name
starts with its topic's prefix (swa_, sinks_, longctx_, sampling_, fa_, flashdec_, paged_,
prefix_, sched_, evict_, batchinv_, mask_). Model shapes come from figures.py, GPU peaks from
hardware.py, the formulas from inference_math.py; the constants below are the few the cards
need that are neither (each with its source).
"""

from __future__ import annotations

import math

import numpy as np

from app.content import inference_math as im
from app.content.hardware import A100_80GB, H100_SXM
from app.content.shapes import (
    GEMMA2_9B,
    GIB,
    KIB,
    LLAMA2_7B,
    LLAMA3_8B,
    LLAMA31_70B,
    LLAMA31_405B,
    MIB,
    MISTRAL_7B,
    ModelShape,
)

MISTRAL_WINDOW = 4096  # mistralai/Mistral-7B-v0.1 config.json: sliding_window
GEMMA2_WINDOW = 4096  # google/gemma-2-9b config.json: sliding_window (global layers: 8,192)
GEMMA2_CONTEXT = 8192
LLAMA31_ROPE_THETA = 500_000.0  # meta-llama/Llama-3.1-8B config.json
VLLM_GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default gpu_memory_utilization (engine arguments)
EVICTION_BUDGET = 0.2  # share of the cache H2O keeps in its headline runs (20% heavy hitters)
LLAMA31_ROPE = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original": 8192}
LLAMA2_ROPE_BASE = 10_000.0
H100_SMS = 132  # NVIDIA H100 Tensor Core GPU Architecture whitepaper: H100 SXM5, 132 SMs
VLLM_BLOCK = 16  # vLLM's default KV block size in tokens
VLLM_V2_PARTITION = 512  # vLLM paged_attention_v2: tokens per partition of the split-K kernel
GPU_24GB_BYTES = 24 * 10**9  # NVIDIA L4 data sheet: 24 GB GDDR6
PCIE5_X16_ONE_WAY = 64e9  # H100 data sheet: PCIe Gen5 128 GB/s, both directions together
SAMPLING_LOGITS = [3.0, 2.0, 1.0, 0.5, -1.0]  # a five-token toy vocabulary for the sampling cards


def _int(n: float) -> str:
    return f"{round(n):,}"


def _gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def figures() -> dict[str, str]:
    """name -> the exact text a card must print for that figure."""
    f: dict[str, str] = {}
    for part in (_windows, _long_context, _sampling, _flash, _prefix, _scheduling, _masks):
        f.update(part())
    return f


def _windows() -> dict[str, str]:
    f: dict[str, str] = {}
    m = MISTRAL_7B
    f["swa_mistral_reach"] = _int(im.window_reach(m.layers, MISTRAL_WINDOW))
    full = im.windowed_kv_bytes(m.layers, 0, MISTRAL_WINDOW, m.kv_heads, m.head_dim, 32768, 2)
    rolled = im.windowed_kv_bytes(0, m.layers, MISTRAL_WINDOW, m.kv_heads, m.head_dim, 32768, 2)
    f["swa_mistral_saving_32k"] = f"{full // rolled}x"
    f["swa_mistral_gib_32k_x32_full"] = _gib(32 * full)
    f["swa_mistral_gib_32k_x32_rolled"] = _gib(32 * rolled)
    f["swa_rolling_slot_10000"] = _int(10000 % MISTRAL_WINDOW)
    # StreamingLLM on Llama-2-7B: 4 sink tokens plus 2,044 recent ones, a 2,048-token cache.
    f["sinks_llama2_7b_gib_2048"] = _gib(LLAMA2_7B.kv_bytes(2048))
    f["sinks_llama2_7b_sink_mib"] = f"{LLAMA2_7B.kv_bytes(4) / MIB:g} MiB"
    # Gemma-2-9B: 42 layers, half local (window 4,096), half global (8,192).
    g = GEMMA2_9B
    half = g.layers // 2
    f["swa_gemma2_9b_kib_per_token"] = f"{g.kv_bytes(1) / KIB:g} KiB"
    all_global = im.windowed_kv_bytes(g.layers, 0, GEMMA2_WINDOW, g.kv_heads, g.head_dim, GEMMA2_CONTEXT, 2)
    hybrid = im.windowed_kv_bytes(half, half, GEMMA2_WINDOW, g.kv_heads, g.head_dim, GEMMA2_CONTEXT, 2)
    f["swa_gemma2_9b_gib_8k_global"] = _gib(all_global)
    f["swa_gemma2_9b_gib_8k_hybrid"] = _gib(hybrid)
    f["swa_gemma2_9b_saving_8k"] = _pct(1 - hybrid / all_global)
    # A 5:1 local:global pattern with a 1,024-token window (Gemma 3's), at 32,768 tokens: the
    # share of an all-global cache that is left (shape-independent: every layer the same size).
    f["swa_five_to_one_share_32k"] = _pct((1 * 32768 + 5 * 1024) / (6 * 32768))
    return f


def _llama31_rope_pairs() -> tuple[int, int, int]:
    """(unchanged, divided by factor, blended) frequency pairs of Llama-3.1's rope_scaling."""
    head_dim = 128
    orig = LLAMA31_ROPE["original"]
    high_wavelen = orig / LLAMA31_ROPE["high_freq_factor"]
    low_wavelen = orig / LLAMA31_ROPE["low_freq_factor"]
    wavelengths = [2 * math.pi * LLAMA31_ROPE_THETA ** (2 * i / head_dim) for i in range(head_dim // 2)]
    unchanged = sum(1 for w in wavelengths if w < high_wavelen)
    scaled = sum(1 for w in wavelengths if w > low_wavelen)
    return unchanged, scaled, len(wavelengths) - unchanged - scaled


def _layer_params(model: ModelShape) -> int:
    """Weights a prompt token passes through: every layer, not the embeddings or the LM head
    (the head runs once, for the last prompt token)."""
    return model.layer_params()


def prefill_flops(model: ModelShape, prompt: int, cached: int = 0) -> float:
    """FLOPs of prefilling `prompt` tokens when the first `cached` are already cached, on the
    bank's one convention (ModelShape.prefill_flops: layers, attention, the LM head once)."""
    return model.prefill_flops(prompt, cached)


def _long_context() -> dict[str, str]:
    f: dict[str, str] = {}
    unchanged, scaled, blended = _llama31_rope_pairs()
    f["longctx_llama31_pairs_unchanged"] = str(unchanged)
    f["longctx_llama31_pairs_scaled"] = str(scaled)
    f["longctx_llama31_pairs_blended"] = str(blended)
    orig = LLAMA31_ROPE["original"]
    f["longctx_llama31_high_wavelen"] = _int(orig / LLAMA31_ROPE["high_freq_factor"])
    f["longctx_llama31_factor_x_original"] = _int(orig * LLAMA31_ROPE["factor"])
    f["longctx_llama31_rope_factor"] = f"{LLAMA31_ROPE['factor']:g}x"
    # NTK-aware: raise the base so the lowest frequency is interpolated by s, b' = b s^(d/(d-2)).
    f["longctx_ntk_base_s4"] = _int(LLAMA2_ROPE_BASE * 4 ** (128 / 126))
    f["longctx_pi_position_16000_s4"] = _int(16000 / 4)
    for s in (8, 16, 32):  # YaRN's attention scaling, sqrt(1/t) = 0.1 ln(s) + 1
        f[f"longctx_yarn_scale_s{s}"] = f"{0.1 * math.log(s) + 1:.3f}"
    for key, model in (("8b", LLAMA3_8B), ("70b", LLAMA31_70B), ("405b", LLAMA31_405B)):
        f[f"longctx_llama31_{key}_gib_128k"] = _gib(model.kv_bytes(131072))
    m = LLAMA3_8B  # Llama-3.1-8B has Llama-3-8B's shape
    f["longctx_llama31_8b_layer_params"] = f"{_layer_params(m) / 1e9:.2f}B"
    for n, label in ((8192, "8k"), (131072, "128k")):
        attention = im.prefill_attention_flops(m.layers, m.q_heads, m.head_dim, n)
        f[f"longctx_attn_share_{label}"] = _pct(attention / prefill_flops(m, n))
    t8k = im.compute_time(prefill_flops(m, 8192), H100_SXM)
    t128k = im.compute_time(prefill_flops(m, 131072), H100_SXM)
    f["longctx_prefill_ms_8k_h100"] = f"{t8k * 1e3:.0f} ms"
    f["longctx_prefill_s_128k_h100"] = f"{t128k:.1f} s"
    f["longctx_prefill_ratio_128k_8k"] = f"{t128k / t8k:.0f}x"
    f["longctx_prompt_ratio_128k_8k"] = f"{131072 / 8192:.0f}x"
    weights = m.llama_params() * 2
    short = im.min_time_per_token(m.decode_read_bytes(), 0, H100_SXM)
    long = im.min_time_per_token(m.decode_read_bytes(), m.kv_bytes(131072), H100_SXM)
    f["longctx_decode_ms_short_h100"] = f"{short * 1e3:.2f} ms"
    f["longctx_decode_ms_128k_h100"] = f"{long * 1e3:.2f} ms"
    # Llama-3.1-8B on a 24 GB card (an L4, say) at vLLM's default utilisation.
    pool = VLLM_GPU_MEMORY_UTILIZATION * GPU_24GB_BYTES - weights
    f["longctx_vllm_reserved_share"] = _pct(1 - VLLM_GPU_MEMORY_UTILIZATION)
    f["longctx_24gb_pool_gb"] = f"{pool / 1e9:.1f} GB"
    f["longctx_24gb_max_tokens"] = _int(math.floor(pool / m.kv_bytes(VLLM_BLOCK)) * VLLM_BLOCK)
    f["longctx_24gb_max_tokens_fp8"] = _int(math.floor(pool / (m.kv_bytes(VLLM_BLOCK) / 2)) * VLLM_BLOCK)
    return f


def _sampling() -> dict[str, str]:
    f: dict[str, str] = {}
    for t, label in ((1.0, "t1"), (0.5, "t05"), (2.0, "t2")):
        probs = im.softmax(SAMPLING_LOGITS, t)
        f[f"sampling_probs_{label}"] = ", ".join(f"{p:.2f}" for p in probs)
        f[f"sampling_top_p09_{label}"] = str(im.nucleus_size(probs, 0.9))
        f[f"sampling_min_p01_{label}"] = str(im.min_p_kept(probs, 0.1))
        f[f"sampling_min_p01_threshold_{label}"] = f"{0.1 * max(probs):.3f}"
    probs = im.softmax(SAMPLING_LOGITS)
    f["sampling_top_k2_first"] = f"{probs[0] / (probs[0] + probs[1]):.2f}"
    f["sampling_rep_pos"] = f"{im.repetition_penalty(2.0, 1.2):.2f}"
    f["sampling_rep_neg"] = f"{im.repetition_penalty(-1.0, 1.2):.2f}"
    f["sampling_freq_pres"] = f"{im.frequency_presence_penalty(2.0, 3, 0.3, 0.5):.2f}"
    # Beam search, 4 beams, Llama-3-8B: a 1,000-token prompt and 500 tokens on each beam.
    per_token = LLAMA3_8B.kv_bytes(1)
    f["sampling_beam4_mib_copied"] = f"{4 * 1500 * per_token / MIB:g} MiB"
    f["sampling_beam4_mib_shared"] = f"{(1000 + 4 * 500) * per_token / MIB:g} MiB"
    return f


def _flash() -> dict[str, str]:
    f: dict[str, str] = {}
    f["fa2_a100_training_mfu"] = _pct(225e12 / A100_80GB.bf16_flops)  # FA2 paper: 225 TFLOPs/s
    f["fa3_h100_fp16_util"] = _pct(740e12 / H100_SXM.bf16_flops)  # FA3 paper: 740 TFLOPs/s
    # FA2 paper: the A100 does 19.5 TFLOPs/s of non-matmul FP32; FA3 paper: the H100 SXM5
    # does 3.9 TFLOPs/s of special functions (exp). Each against the tensor-core peak.
    f["fa2_a100_matmul_vs_scalar"] = f"{A100_80GB.bf16_flops / 19.5e12:.0f}x"
    f["fa3_h100_matmul_vs_exp"] = f"{H100_SXM.bf16_flops / 3.9e12:.0f}x"
    # Decode at batch 1 on Llama-3-8B: one thread block per query head without a split.
    heads = LLAMA3_8B.q_heads
    f["flashdec_sm_share_b1"] = _pct(heads / H100_SMS)
    f["flashdec_min_splits_b1"] = str(im.ceil_div(H100_SMS, heads))
    cache_64k = LLAMA3_8B.kv_bytes(65536)
    f["flashdec_llama3_8b_gib_64k"] = _gib(cache_64k)
    f["flashdec_read_ms_64k_h100"] = f"{im.min_time_per_token(0, cache_64k, H100_SXM) * 1e3:.2f} ms"
    f["paged_v2_partitions_64k"] = _int(65536 / VLLM_V2_PARTITION)
    # The log-sum-exp merge on scores [1, 2, 3, 4] and values [10, 20, 30, 40], split in halves.
    scores, values = [1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]
    partials = []
    for i, (lo, hi) in enumerate(((0, 2), (2, 4)), start=1):
        local = im.softmax(scores[lo:hi])
        out = sum(p * v for p, v in zip(local, values[lo:hi], strict=True))
        lse = im.logsumexp(scores[lo:hi])
        partials.append((out, lse))
        f[f"flashdec_lse_split{i}"] = f"{lse:.3f}"
        f[f"flashdec_out_split{i}"] = f"{out:.2f}"
    total = im.logsumexp([lse for _, lse in partials])
    f["flashdec_lse_merged"] = f"{total:.3f}"
    f["flashdec_weight_split1"] = f"{math.exp(partials[0][1] - total):.3f}"
    f["flashdec_weight_split2"] = f"{math.exp(partials[1][1] - total):.3f}"
    f["flashdec_out_merged"] = f"{im.merge_attention_splits(partials):.2f}"
    # PagedAttention blocks of 16 tokens on Llama-3-8B.
    f["paged_llama3_8b_block_mib"] = f"{LLAMA3_8B.kv_bytes(VLLM_BLOCK) / MIB:g} MiB"
    f["paged_llama3_8b_block_layer_kib"] = f"{LLAMA3_8B.kv_bytes(VLLM_BLOCK) / LLAMA3_8B.layers / KIB:g} KiB"
    f["paged_llama3_8b_worst_waste_mib"] = f"{LLAMA3_8B.kv_bytes(VLLM_BLOCK - 1) / MIB:.2f} MiB"
    f["paged_blocks_4096"] = _int(im.ceil_div(4096, VLLM_BLOCK))
    return f


def _prefix() -> dict[str, str]:
    f: dict[str, str] = {}
    reused = im.reusable_prefix_tokens(1000, VLLM_BLOCK)
    f["prefix_reused_1000_b16"] = _int(reused)
    f["prefix_recomputed_1000_b16"] = _int(1000 - reused)
    f["prefix_sys_2048_mib"] = f"{LLAMA3_8B.kv_bytes(2048) / MIB:g} MiB"
    f["prefix_sys_2048_x64_gib"] = _gib(64 * LLAMA3_8B.kv_bytes(2048))
    cold = im.compute_time(prefill_flops(LLAMA3_8B, 4000), H100_SXM)
    warm = im.compute_time(prefill_flops(LLAMA3_8B, 4000, cached=3000), H100_SXM)
    f["prefix_prefill_ms_4000_cold"] = f"{cold * 1e3:.1f} ms"
    f["prefix_prefill_ms_4000_warm"] = f"{warm * 1e3:.1f} ms"
    f["prefix_prefill_speedup_4000_3000"] = f"{cold / warm:.1f}x"
    f["prefix_hit_rate_4000_3000"] = _pct(3000 / 4000)
    f["prefix_naive_speedup_4000_3000"] = f"{4000 / (4000 - 3000):.0f}x"
    return f


def _scheduling() -> dict[str, str]:
    f: dict[str, str] = {}
    m = LLAMA3_8B
    weights = m.llama_params() * 2
    budget = VLLM_GPU_MEMORY_UTILIZATION * H100_SXM.hbm_bytes - weights
    block = m.kv_bytes(VLLM_BLOCK)
    blocks = math.floor(budget / block)
    f["sched_llama3_8b_weights_gb"] = f"{weights / 1e9:.1f} GB"
    f["sched_llama3_8b_h100_free_gb"] = f"{(H100_SXM.hbm_bytes - weights) / 1e9:.1f} GB"
    f["sched_llama3_8b_h100_kv_gb"] = f"{budget / 1e9:.1f} GB"
    f["sched_llama3_8b_h100_blocks"] = _int(blocks)
    f["sched_llama3_8b_h100_tokens"] = _int(blocks * VLLM_BLOCK)
    f["sched_llama3_8b_h100_seqs_4k"] = _int(blocks * VLLM_BLOCK // 4096)
    seq = m.kv_bytes(4096)
    f["sched_swap_ms_4k"] = f"{seq / PCIE5_X16_ONE_WAY * 1e3:.1f} ms"
    f["sched_recompute_ms_4k"] = f"{im.compute_time(prefill_flops(m, 4096), H100_SXM) * 1e3:.1f} ms"
    f["evict_llama3_8b_gib_16k"] = _gib(m.kv_bytes(16384))
    f["evict_budget_share"] = _pct(EVICTION_BUDGET)
    f["evict_llama3_8b_gib_16k_20pct"] = _gib(EVICTION_BUDGET * m.kv_bytes(16384))
    f["evict_llama3_8b_mib_1024"] = f"{m.kv_bytes(1024) / MIB:g} MiB"
    big, one = np.float32(1e8), np.float32(1)
    f["batchinv_fp32_left"] = f"{float((big + one) - big):.1f}"
    f["batchinv_fp32_right"] = f"{float(one + (big - big)):.1f}"
    return f


def _masks() -> dict[str, str]:
    f: dict[str, str] = {}
    fp16_min = np.finfo(np.float16).min
    f["mask_fp16_min"] = _int(float(fp16_min))
    with np.errstate(over="ignore"):
        f["mask_fp16_of_minus_1e9"] = str(float(np.float16(-1e9)))
        f["mask_fp16_min_twice"] = str(float(fp16_min + fp16_min))
        f["mask_fp16_min_minus_16"] = str(float(fp16_min - np.float16(16)))
    f["mask_fp16_min_minus_15"] = _int(float(fp16_min - np.float16(15)))
    f["mask_fp16_exp_limit"] = f"{math.log(float(np.finfo(np.float16).max)):.2f}"
    bf16_min = -(2 - 2**-7) * 2.0**127  # bfloat16 keeps float32's exponent with 8 mantissa bits
    f["mask_bf16_min"] = f"{bf16_min:.3g}"
    return f
