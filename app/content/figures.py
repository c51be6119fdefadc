"""Every computed figure a card may quote, by name.

Cards declare the figures they state in their front matter (`figures: {name: "512 KiB"}`);
tests/content/test_figures.py recomputes each one here and fails when a card
disagrees. Run `kvprep figures` to print the table.

This module holds the KV-cache round's figures (the first five models) and merges every
area's (figures_hardware, figures_models, figures_serving, figures_kernels, figures_2026). Model
shapes live in app.content.shapes, which the area modules import; none of them imports this one.
"""

from __future__ import annotations

from app.content import (
    figures_2026,
    figures_2026_design,
    figures_2026_serving,
    figures_2026_systems,
    figures_2026_thin,
    figures_hardware,
    figures_kernels,
    figures_models,
    figures_serving,
)
from app.content.shapes import GIB, GPT2_SMALL, GPU_80GB_BYTES, KIB, LLAMA2_70B, MIB, MODELS, ModelShape

# The bank's one convention for prefill FLOPs (ModelShape.prefill_flops), in the words every card
# that states a prefill figure carries in its Notes (tests/content/test_prefill_convention.py).
PREFILL_CONVENTION = (
    "Prefill FLOPs on this card follow the bank's one convention, the way serving engines run a "
    "prefill: each new prompt token passes through every layer (2 FLOPs per layer parameter, plus "
    "causal attention's q.k and p.v against the positions before it), and the LM head runs once, "
    "on the last position, to sample the first output token."
)
# Figure names computed from prefill FLOPs: a card declaring one must state the convention.
PREFILL_FIGURE_PREFIXES = (
    "roofline_prefill_ms_",
    "roofline_mfu_example",
    "latency_prefill_",
    "latency_total_",
    "quadratic_attention_share_",
    "quadratic_prefill_ratio_",
    "chunked_qwen_prefill_",
    "chunked_qwen_attention_share_",
    "chunked_qwen_stall_steps",
    "chunked_budget_compute_ms",
    "chunked_70b_prefill_",
    "chunked_70b_transfer_share_",
    "longctx_attn_share_",
    "longctx_prefill_",
    "prefix_prefill_",
    "sched_recompute_ms_",
    "serving_qwen_prefill_",
    "cp_405b_prefill_",
    "cp_405b_attention_share_",
    "cp_405b_paper_utilisation_",
    "tier_70b_recompute_",
    "tier_70b_nvlink_vs_",
    "tier_70b_pcie_vs_",
    "tier_70b_rdma_vs_",
    "tier_70b_ssd_vs_",
    "tier_break_even_",
    "tier_70b_pcie_margin",
    "tier_llama2_7b_pcie_margin",
    "tier_route_",
    "reason_recompute_",
    "design_prefill_",
    "design_total_gpus",
    "design_dollars_per_hour",
    "design_cost_per_m_input",
    "design_cost_per_m_blended",
    "design_offline_prefill_",
    "design_agent_cold_",
    "design_agent_warm_",
    "thin_bw_prefill_",
)


# kvprep's GPT-2 small measurements on a CPU (seed 000), in milliseconds. Quoted on the cards as
# measured; only the ratios below are derived from them.
GPT2_CPU_MS = {
    "prefill_16": 15.3,
    "prefill_960": 219.6,
    "step_min": 8.0,  # "a decode step stayed between 8.0 and 9.6 ms"
    "step_max": 9.6,
    "cached_step_960": 9.6,
    "uncached_step_960": 228.8,
}


def gpt2_small_params() -> int:
    """GPT-2 small's parameters: tied token embedding, learned positions, biases, LayerNorms."""
    d, vocab, positions, layers, ff = 768, 50257, 1024, 12, 3072
    block = (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (2 * d) + (d * ff + ff) + (ff * d + d)
    return vocab * d + positions * d + layers * block + 2 * d


def _int(n: int) -> str:
    return f"{n:,}"


def naive_vs_cached_work(prompt_len: int, n_new: int, *, unused_last_step: bool = True) -> dict[str, int]:
    """Work counters of the one-layer NumPy lesson (seed 002): projections and score elements.

    Naive: each of n_new steps re-runs the whole sequence of length t (3t projections, t*t scores).
    Cached: one prefill over the prompt (it yields the first new token), then a decode step per
    further token. The lesson's loop runs n_new decode steps, the last of which computes logits
    nobody reads (unused_last_step=True, its measured 192 and 2,086); a tight loop stops after
    n_new - 1 (unused_last_step=False).
    """
    steps = n_new if unused_last_step else n_new - 1
    naive_lengths = range(prompt_len, prompt_len + n_new)
    cached_lengths = range(prompt_len + 1, prompt_len + steps + 1)
    return {
        "naive_proj": sum(3 * t for t in naive_lengths),
        "naive_scores": sum(t * t for t in naive_lengths),
        "cached_proj": 3 * prompt_len + 3 * steps,
        "cached_scores": prompt_len * prompt_len + sum(cached_lengths),
    }


def compute_figures() -> dict[str, str]:
    """name -> the exact text a card must print for that figure (every area's, merged)."""
    merged = _model_figures()
    areas = (figures_hardware, figures_models, figures_serving, figures_kernels)
    for area in (
        *areas,
        figures_2026,
        figures_2026_systems,
        figures_2026_serving,
        figures_2026_design,
        figures_2026_thin,
    ):
        for name, text in area.figures().items():
            if name in merged:
                raise ValueError(f"figure {name!r} is defined twice ({area.__name__})")
            merged[name] = text
    return merged


def _model_figures() -> dict[str, str]:
    """The cache-arithmetic figures of the first five models (the KV-cache round)."""
    f: dict[str, str] = {}
    f["gpt2_positions"] = _int(1024)
    f["gpt2_small_kib_per_token_fp32"] = f"{GPT2_SMALL.kv_bytes(1) / KIB:g} KiB"
    f["gpt2_small_gib_1024x64_fp32"] = f"{GPT2_SMALL.kv_bytes(1024, 64) / GIB:.2f} GiB"
    for key, model in MODELS.items():
        if key == "gpt2_small":
            continue
        f[f"{key}_kib_per_token"] = f"{model.kv_bytes(1) / KIB:g} KiB"
        f[f"{key}_gib_4k"] = f"{model.kv_bytes(4096) / GIB:.2f} GiB"
        f[f"{key}_gib_32k"] = f"{model.kv_bytes(32768) / GIB:.2f} GiB"
        f[f"{key}_gib_4k_x32"] = f"{model.kv_bytes(4096, 32) / GIB:.2f} GiB"
    f["llama2_70b_bytes_per_token"] = _int(LLAMA2_70B.kv_bytes(1))
    f["llama2_70b_gib_8000"] = f"{LLAMA2_70B.kv_bytes(8000) / GIB:.2f} GiB"
    f["llama2_70b_gb_8000"] = f"{LLAMA2_70B.kv_bytes(8000) / 1e9:.2f} GB"
    f["llama2_70b_gb_8000_x32"] = f"{LLAMA2_70B.kv_bytes(8000, 32) / 1e9:.1f} GB"
    f["llama2_70b_8000_seqs_80gb"] = _int(GPU_80GB_BYTES // LLAMA2_70B.kv_bytes(8000))
    f["llama2_70b_gqa_factor"] = f"{LLAMA2_70B.q_heads // LLAMA2_70B.kv_heads}x"
    mha_70b = ModelShape("70B MHA", 80, 64, 64, 8192, 32000, 28672)
    mqa_70b = ModelShape("70B MQA", 80, 64, 1, 8192, 32000, 28672)
    f["mha_70b_gib_4k"] = f"{mha_70b.kv_bytes(4096) / GIB:.2f} GiB"
    f["mqa_70b_gib_4k"] = f"{mqa_70b.kv_bytes(4096) / GIB:.2f} GiB"
    f["gpu_80gb_gib"] = f"{GPU_80GB_BYTES / GIB:.1f} GiB"
    for key in ("llama2_7b", "llama3_8b"):
        model = MODELS[key]
        params = model.llama_params()
        weights = params * 2  # fp16
        f[f"{key}_params"] = f"{params / 1e9:.2f}B"
        f[f"{key}_weights_gib_fp16"] = f"{weights / GIB:.1f} GiB"
        f[f"{key}_4k_seqs_80gb"] = _int((GPU_80GB_BYTES - weights) // model.kv_bytes(4096))
        f[f"{key}_4k_seqs_80gb_exact"] = f"{(GPU_80GB_BYTES - weights) / model.kv_bytes(4096):.1f}"
    for n in (1024, 4096, 32768, 131072):
        f[f"score_entries_{n}"] = _int(n * n)
        f[f"score_fp16_mib_{n}"] = f"{_int(n * n * 2 // MIB)} MiB"
    f["prefill_ratio_1m_vs_32k"] = _int((2**20 // 32768) ** 2)
    f["cache_ratio_1m_vs_32k"] = _int(2**20 // 32768)
    work = naive_vs_cached_work(4, 60)
    for name, value in work.items():
        f[f"lesson_{name}_4_60"] = _int(value)
    tight = naive_vs_cached_work(4, 60, unused_last_step=False)
    f["lesson_cached_proj_4_60_tight"] = _int(tight["cached_proj"])
    f["lesson_cached_scores_4_60_tight"] = _int(tight["cached_scores"])
    f["lesson_proj_ratio_4_60_tight"] = f"{tight['naive_proj'] / tight['cached_proj']:.0f}x"
    f["lesson_scores_ratio_4_60_tight"] = f"{tight['naive_scores'] / tight['cached_scores']:.0f}x"
    long = naive_vs_cached_work(2000, 500, unused_last_step=False)
    naive_tokens, cached_tokens = long["naive_proj"] // 3, long["cached_proj"] // 3  # token-projections
    f["naive_proj_2000_500"] = _int(naive_tokens)
    f["cached_proj_2000_500"] = _int(cached_tokens)  # prefill 2,000 + 499 decode steps
    f["naive_vs_cached_ratio_2000_500"] = f"{naive_tokens / cached_tokens:.0f}x"
    # A naive step at length t pushes t tokens through the projections; a cached step pushes one.
    # The naive loop's first step (2,000 tokens) is the prefill's counterpart; the first decode
    # step it is compared with is its second, over 2,001 tokens.
    f["naive_step_ratio_2000_500_first"] = f"{_int((2000 + 1) // 1)}x"
    f["naive_step_ratio_2000_500_last"] = f"{_int((2000 + 500 - 1) // 1)}x"
    cpu = GPT2_CPU_MS
    f["gpt2_cpu_prefill_ratio_960_vs_16"] = f"{cpu['prefill_960'] / cpu['prefill_16']:.1f}x"
    f["gpt2_cpu_prompt_ratio_960_vs_16"] = f"{960 // 16}x"
    f["gpt2_cpu_prefill_ms_per_token_16"] = f"{cpu['prefill_16'] / 16:.2f} ms"
    f["gpt2_cpu_prefill_ms_per_token_960"] = f"{cpu['prefill_960'] / 960:.2f} ms"
    f["gpt2_cpu_cached_speedup_960"] = f"{cpu['uncached_step_960'] / cpu['cached_step_960']:.0f}x"
    # Re-running 16 tokens costs about their prefill; against the fastest and slowest cached step.
    f["gpt2_cpu_short_speedup_max"] = f"{cpu['prefill_16'] / cpu['step_min']:.1f}x"
    f["gpt2_cpu_short_speedup_min"] = f"{cpu['prefill_16'] / cpu['step_max']:.1f}x"
    f["gpt2_small_params"] = f"{gpt2_small_params() / 1e6:.0f}M"
    f["gpt2_small_weights_mb_fp32"] = f"{gpt2_small_params() * 4 / 1e6:.0f} MB"
    f["gpt2_small_cache_vs_weights"] = f"{GPT2_SMALL.kv_bytes(1024, 64) / (gpt2_small_params() * 4):.1f}x"
    return f
