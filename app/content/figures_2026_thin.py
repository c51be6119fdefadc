"""Figures of the cards that brought the thin topics up (issue 24) and replaced retired repeats.

Merged into app.content.figures.compute_figures() like the other area modules; every name starts
with `thin_` and then its topic: `thin_kvmem_` (kv-memory), `thin_levers_` (cache-levers),
`thin_paged_` (paged-attention), `thin_flash_` (flashattention), `thin_tp_` (parallelism),
`thin_moe_` (moe-inference), `thin_roof_` (roofline), `thin_batch_` (batching-throughput),
`thin_bw_` (blackwell), `thin_naive_` (naive-vs-cached). Conventions as in figures_2026: decode
reads every multiplied weight once (not the input embedding table), sizes in GB are decimal and
cache sizes in GiB/KiB binary;
prefill FLOPs are ModelShape.prefill_flops (PREFILL_CONVENTION).
"""

from __future__ import annotations

from dataclasses import replace

from app.content import inference_math as im
from app.content.hardware import B200_SXM, BLACKWELL_FP8_FP4, H100_SXM
from app.content.shapes import (
    DEEPSEEK_V3,
    GIB,
    GPU_80GB_BYTES,
    KIB,
    LLAMA2_7B,
    LLAMA3_8B,
    LLAMA31_70B,
    MIXTRAL_8X7B,
    ModelShape,
)


def figures() -> dict[str, str]:
    f: dict[str, str] = {}
    parts = (
        _kv_memory,
        _cache_levers,
        _paged,
        _flash,
        _parallel,
        _moe,
        _roofline,
        _batching,
        _blackwell,
        _naive,
    )
    for part in parts:
        f.update(part())
    return f


def tokens_where_cache_equals_weights(model: ModelShape) -> float:
    """Context length at which one sequence's bf16 KV cache takes as many bytes as the bf16
    weights in memory (dense_params: the footprint, input embedding table included)."""
    return model.dense_params() * 2 / model.kv_bytes(1)


def _kv_memory() -> dict[str, str]:
    f: dict[str, str] = {}
    for key, model in (("llama2_7b", LLAMA2_7B), ("llama3_8b", LLAMA3_8B), ("llama31_70b", LLAMA31_70B)):
        f[f"thin_kvmem_tokens_equal_weights_{key}"] = f"{tokens_where_cache_equals_weights(model):,.0f}"
    # At 4,096 tokens a sequence, how many sequences' caches weigh as much as the weights.
    for key, model in (("llama2_7b", LLAMA2_7B), ("llama3_8b", LLAMA3_8B)):
        ratio = model.dense_params() * 2 / model.kv_bytes(4096)
        f[f"thin_kvmem_seqs_4k_equal_weights_{key}"] = f"{ratio:.1f}"
    f["thin_kvmem_llama31_70b_seqs_128k_equal_weights"] = (
        f"{LLAMA31_70B.dense_params() * 2 / LLAMA31_70B.kv_bytes(131072):.1f}"
    )
    return f


def _cache_levers() -> dict[str, str]:
    """Cross-layer attention (Brandon et al. 2024): CLA2 shares one K/V between each pair of
    adjacent layers, so only layers / 2 caches exist. Shown on the Llama-3-8B shape."""
    f: dict[str, str] = {}
    m = LLAMA3_8B
    cla2 = replace(m, layers=m.layers // 2)
    mqa = replace(m, kv_heads=1)
    mqa_cla2 = replace(mqa, layers=m.layers // 2)
    f["thin_levers_llama3_8b_kib"] = f"{m.kv_bytes(1) / KIB:g} KiB"
    f["thin_levers_llama3_8b_cla2_kib"] = f"{cla2.kv_bytes(1) / KIB:g} KiB"
    f["thin_levers_llama3_8b_mqa_kib"] = f"{mqa.kv_bytes(1) / KIB:g} KiB"
    f["thin_levers_llama3_8b_mqa_cla2_kib"] = f"{mqa_cla2.kv_bytes(1) / KIB:g} KiB"
    f["thin_levers_llama3_8b_gib_128k"] = f"{m.kv_bytes(131072) / GIB:.2f} GiB"
    f["thin_levers_llama3_8b_cla2_gib_128k"] = f"{cla2.kv_bytes(131072) / GIB:.2f} GiB"
    return f


# Parallel sampling on a paged cache: one 1,000-token prompt, four completions of 200 tokens each,
# 16-token blocks. With sharing the prompt's full blocks are stored once; the partly filled last
# block is copied on the first write of each completion (copy-on-write), then each grows alone.
PAGED_BLOCK, PAGED_PROMPT, PAGED_SAMPLES, PAGED_OUTPUT = 16, 1000, 4, 200


def _paged() -> dict[str, str]:
    f: dict[str, str] = {}
    full_prompt_blocks = PAGED_PROMPT // PAGED_BLOCK
    tail = PAGED_PROMPT - full_prompt_blocks * PAGED_BLOCK  # tokens in the shared partial block
    per_sample = im.ceil_div(tail + PAGED_OUTPUT, PAGED_BLOCK)  # its copy of the tail, then its own
    shared = full_prompt_blocks + PAGED_SAMPLES * per_sample
    unshared = PAGED_SAMPLES * im.ceil_div(PAGED_PROMPT + PAGED_OUTPUT, PAGED_BLOCK)
    f["thin_paged_prompt_blocks"] = f"{im.ceil_div(PAGED_PROMPT, PAGED_BLOCK)}"
    f["thin_paged_full_prompt_blocks"] = f"{full_prompt_blocks}"
    f["thin_paged_tail_tokens"] = f"{tail}"
    f["thin_paged_blocks_per_sample"] = f"{per_sample}"
    f["thin_paged_blocks_shared"] = f"{shared}"
    f["thin_paged_blocks_unshared"] = f"{unshared}"
    f["thin_paged_saving"] = f"{1 - shared / unshared:.0%}"
    # The same four completions on Llama-3-8B's cache (128 KiB a token, 2 MiB a 16-token block).
    block_bytes = LLAMA3_8B.kv_bytes(PAGED_BLOCK)
    f["thin_paged_block_mib_llama3_8b"] = f"{block_bytes / 2**20:g} MiB"
    f["thin_paged_shared_mib_llama3_8b"] = f"{shared * block_bytes / 2**20:,.0f} MiB"
    f["thin_paged_unshared_mib_llama3_8b"] = f"{unshared * block_bytes / 2**20:,.0f} MiB"
    return f


# Causal FlashAttention at N = 4,096 with 128 x 128 tiles: tiles above the diagonal are skipped.
FLASH_N, FLASH_TILE = 4096, 128


def _flash() -> dict[str, str]:
    f: dict[str, str] = {}
    side = FLASH_N // FLASH_TILE
    computed = side * (side + 1) // 2  # the lower triangle of tiles, diagonal included
    f["thin_flash_tiles_per_side"] = f"{side}"
    f["thin_flash_tiles_total"] = f"{side * side:,}"
    f["thin_flash_tiles_computed"] = f"{computed:,}"
    f["thin_flash_tiles_share"] = f"{computed / (side * side):.1%}"
    f["thin_flash_diagonal_tiles"] = f"{side}"
    # Padding a batch instead of packing it: lengths 512 and 3,584 padded to 4,096 (two sequences).
    short, long = 512, 3584
    padded = 2 * FLASH_N**2
    packed = short**2 + long**2
    f["thin_flash_pad_score_ratio"] = f"{padded / packed:.2f}x"
    return f


def _parallel() -> dict[str, str]:
    """Llama-3-8B on eight H100s: one TP=8 group against eight independent replicas."""
    f: dict[str, str] = {}
    m, gpu = LLAMA3_8B, H100_SXM
    read = m.decode_read_bytes()
    footprint = m.dense_params() * 2
    f["thin_tp_llama3_8b_ms_tp1"] = f"{read / gpu.hbm_bytes_per_s * 1e3:.2f} ms"
    f["thin_tp_llama3_8b_ms_tp8"] = f"{read / 8 / gpu.hbm_bytes_per_s * 1e3:.2f} ms"
    f["thin_tp_llama3_8b_allreduces"] = f"{2 * m.layers}"
    f["thin_tp_llama3_8b_kv_heads_tp8"] = f"{im.kv_heads_per_gpu(m.kv_heads, 8)}"
    f["thin_tp_llama3_8b_cache_gb_replicas"] = f"{8 * (GPU_80GB_BYTES - footprint) / 1e9:,.1f} GB"
    f["thin_tp_llama3_8b_cache_gb_tp8"] = f"{(8 * GPU_80GB_BYTES - footprint) / 1e9:,.1f} GB"
    return f


# Offloading Mixtral's experts to host memory, worst case (no expert cached on the GPU): each token
# loads its two experts in each of 32 layers over PCIe Gen5 x16 (64 GB/s per direction, half the
# H100 data sheet's 128GB/s, which counts both directions).
PCIE5_X16_BYTES_PER_S = 64e9


def _moe() -> dict[str, str]:
    f: dict[str, str] = {}
    m = MIXTRAL_8X7B
    expert_params = 3 * m.hidden * m.intermediate
    expert_bytes = expert_params * 2
    per_token = 2 * m.layers * expert_bytes
    f["thin_moe_mixtral_expert_params"] = f"{expert_params / 1e6:.1f}M"
    f["thin_moe_mixtral_expert_mb"] = f"{expert_bytes / 1e6:.1f} MB"
    f["thin_moe_mixtral_experts_per_token"] = f"{2 * m.layers}"
    f["thin_moe_mixtral_offload_gb_per_token"] = f"{per_token / 1e9:.1f} GB"
    f["thin_moe_mixtral_offload_s_per_token"] = f"{per_token / PCIE5_X16_BYTES_PER_S:.2f} s"
    f["thin_moe_mixtral_offload_ms_per_token_int4"] = f"{per_token / 4 / PCIE5_X16_BYTES_PER_S * 1e3:.0f} ms"
    f["thin_moe_pcie_per_direction"] = f"{PCIE5_X16_BYTES_PER_S / 1e9:.0f} GB/s"
    f["thin_moe_hbm_vs_pcie"] = f"{H100_SXM.hbm_bytes_per_s / PCIE5_X16_BYTES_PER_S:.0f}x"
    f["thin_moe_mixtral_hbm_ms_per_token"] = f"{per_token / H100_SXM.hbm_bytes_per_s * 1e3:.2f} ms"
    return f


def gqa_decode_attention_intensity(group: int, bytes_per_element: int = 2) -> float:
    """FLOPs per byte of a decode step's attention over the cache, per KV head and cached token:
    the K and V rows (2 x head_dim elements) are read once and serve `group` query heads, each
    doing 2 x head_dim FLOPs for q.k and 2 x head_dim for p.v. head_dim cancels."""
    return group * 4 / (2 * bytes_per_element)


def mla_decode_attention_intensity(bytes_per_element: int = 2) -> float:
    """The same for absorbed MLA: one latent (kv_lora_rank + rope dims) per token and layer serves
    every head; each head scores against all of it and mixes kv_lora_rank values."""
    v3 = DEEPSEEK_V3
    latent = v3.kv_lora_rank + v3.qk_rope_head_dim
    flops = v3.q_heads * (2 * latent + 2 * v3.kv_lora_rank)
    return flops / (latent * bytes_per_element)


def _roofline() -> dict[str, str]:
    f: dict[str, str] = {}
    for key, model in (("llama2_7b", LLAMA2_7B), ("llama3_8b", LLAMA3_8B), ("llama31_70b", LLAMA31_70B)):
        group = model.q_heads // model.kv_heads
        f[f"thin_roof_attn_intensity_{key}"] = f"{gqa_decode_attention_intensity(group):g} FLOP/byte"
    f["thin_roof_attn_intensity_v3_mla"] = f"{mla_decode_attention_intensity():.0f} FLOP/byte"
    f["thin_roof_attn_intensity_llama3_8b_fp8"] = f"{gqa_decode_attention_intensity(4, 1):g} FLOP/byte"
    return f


# A static batch of eight prompts padded to the longest: the prefill work that is padding.
BATCH_PROMPTS = (120, 250, 400, 600, 900, 1200, 1600, 2000)


def _batching() -> dict[str, str]:
    f: dict[str, str] = {}
    longest = max(BATCH_PROMPTS)
    useful = sum(BATCH_PROMPTS)
    padded = longest * len(BATCH_PROMPTS)
    f["thin_batch_pad_useful_tokens"] = f"{useful:,}"
    f["thin_batch_pad_total_tokens"] = f"{padded:,}"
    f["thin_batch_pad_waste"] = f"{1 - useful / padded:.1%}"
    scores_useful = sum(n * n for n in BATCH_PROMPTS)
    f["thin_batch_pad_score_waste"] = f"{1 - scores_useful / (len(BATCH_PROMPTS) * longest**2):.1%}"
    return f


def _blackwell() -> dict[str, str]:
    """A 4,096-token Llama-3.1-70B prefill on one B200 at the dense BF16, FP8 and FP4 peaks."""
    f: dict[str, str] = {}
    flops = LLAMA31_70B.prefill_flops(4096)
    fp8, fp4 = BLACKWELL_FP8_FP4[B200_SXM.name]
    f["thin_bw_prefill_tflop_70b_4k"] = f"{flops / 1e12:,.0f} TFLOP"
    for label, rate in (("bf16", B200_SXM.bf16_flops), ("fp8", fp8), ("fp4", fp4)):
        f[f"thin_bw_prefill_ms_70b_4k_{label}"] = f"{flops / rate * 1e3:.0f} ms"
    f["thin_bw_prefill_ms_70b_4k_h100_bf16"] = f"{flops / H100_SXM.bf16_flops * 1e3:.0f} ms"
    fp4_weight_bytes = LLAMA31_70B.matmul_params() * 4.5 / 8  # NVFP4: 4 bits + an 8-bit scale per 16
    f["thin_bw_prefill_intensity_70b_4k_fp4"] = f"{flops / fp4_weight_bytes:,.0f} FLOP/byte"
    return f


def naive_step_seconds(model: ModelShape, tokens: int) -> float:
    """A cache-less step reruns the whole sequence: a prefill of `tokens`, bound by the larger of its
    FLOPs at the dense BF16 peak and one read of the weights (H100)."""
    compute = model.prefill_flops(tokens) / H100_SXM.bf16_flops
    return max(compute, model.decode_read_bytes() / H100_SXM.hbm_bytes_per_s)


def cached_step_seconds(model: ModelShape, context: int) -> float:
    """A cached decode step at batch 1: the weights plus the context's K/V, read once (H100)."""
    return (model.decode_read_bytes() + model.kv_bytes(context)) / H100_SXM.hbm_bytes_per_s


def _naive() -> dict[str, str]:
    """Llama-3-8B, a 2,000-token prompt and a 500-token answer, with and without a cache, as
    roofline bounds on one H100: the naive steps are prefills, the cached ones weight reads."""
    f: dict[str, str] = {}
    m, prompt, new = LLAMA3_8B, 2000, 500
    for label, t in (("first", prompt), ("last", prompt + new - 1)):
        naive, cached = naive_step_seconds(m, t), cached_step_seconds(m, t)
        f[f"thin_naive_step_ms_{label}"] = f"{naive * 1e3:.1f} ms"
        f[f"thin_naive_cached_step_ms_{label}"] = f"{cached * 1e3:.2f} ms"
        f[f"thin_naive_time_ratio_{label}"] = f"{naive / cached:.1f}x"
    # The prefill emits the first answer token, so the cached loop runs 499 decode steps after it.
    naive_total = sum(naive_step_seconds(m, t) for t in range(prompt, prompt + new))
    cached_total = naive_step_seconds(m, prompt) + sum(
        cached_step_seconds(m, t) for t in range(prompt, prompt + new - 1)
    )
    f["thin_naive_total_s"] = f"{naive_total:.1f} s"
    f["thin_naive_cached_total_s"] = f"{cached_total:.2f} s"
    f["thin_naive_total_ratio"] = f"{naive_total / cached_total:.1f}x"
    f["thin_naive_prefill_tflop_2000"] = f"{m.prefill_flops(prompt) / 1e12:.1f} TFLOP"
    return f
