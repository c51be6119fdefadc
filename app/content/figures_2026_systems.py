"""Figures of the 2026 systems topics: wide expert parallelism, context parallelism, CPU launch
overhead, multi-LoRA serving and structured output.

Merged into app.content.figures.compute_figures(); a name defined twice is an error. Names are
prefixed by topic: `wep_` (wide-expert-parallelism), `cp_` (context-parallelism), `cpu_`
(cpu-launch-overhead), `lora_` (multi-lora-serving), `so_` (structured-output).

Conventions are the bank's: decode reads every multiplied weight once (`decode_read_bytes`, no
input embedding table); prefill FLOPs are `ModelShape.prefill_flops`; sizes in GB and bandwidths
are decimal (as the data sheets print them), cache sizes in GiB are binary. Link bandwidths are
per direction: an NVLink 4 port's 900 GB/s counts both directions, so one direction is 450 GB/s;
a 400 Gb/s InfiniBand NIC moves 50 GB/s each way.
"""

from __future__ import annotations

from app.content import inference_math as im
from app.content.figures_2026 import MB
from app.content.hardware import A100_80GB, H100_FP8_FLOPS, H100_SXM, NVLINK4_BYTES_PER_S
from app.content.shapes import GIB, KIB, LLAMA2_7B, LLAMA3_8B, LLAMA31_405B, ModelShape

IB_BYTES_PER_S = 50e9  # one 400 Gb/s CX7 NIC per GPU, per direction (DeepEP's ~50 GB/s)
NVLINK4_PER_DIRECTION = NVLINK4_BYTES_PER_S / 2

# ---------------------------------------------------------------- wide expert parallelism

# deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, moe_intermediate_size 2048,
# num_experts_per_tok 8, n_routed_experts 256, 61 layers of which the first 3 are dense.
V3_HIDDEN, V3_EXPERT_WIDTH, V3_TOP_K, V3_ROUTED, V3_MOE_LAYERS = 7168, 2048, 8, 256, 58
V3_MAX_NODES = 4  # node-limited routing: each token reaches at most 4 nodes (the report, §4.2)
# DeepEP's low-latency benchmark: 128 tokens per rank, top-8, FP8 dispatch, BF16 combine.
DEEPEP_TOKENS_PER_RANK = 128
V3_REDUNDANT = 32  # redundant experts in prefill (report §3.4.1) and in the production note
PREFILL_EP, PRODUCTION_DECODE_EP, PAPER_DECODE_EP, PAPER_DECODE_SPARE = 32, 144, 320, 64
# DeepSeek's online-service note (Feb 2025): decode output per H800 node and per user stream.
NODE_DECODE_TOKENS_PER_S, STREAM_TOKENS_PER_S = 14_800, 21  # "~14.8k tokens/s", "20-22 tokens/s"


def expert_params(hidden: int = V3_HIDDEN, width: int = V3_EXPERT_WIDTH) -> int:
    """One SwiGLU expert: gate and up (hidden x width) and down (width x hidden)."""
    return 3 * hidden * width


def a2a_bytes_per_rank(tokens: int, top_k: int = V3_TOP_K, hidden: int = V3_HIDDEN) -> tuple[int, int]:
    """(dispatch, combine) payload bytes one rank sends for `tokens` tokens in one MoE layer:
    each token's hidden vector to each of its top-k experts in FP8, and each expert output back
    in BF16 (the worst case, every expert on another rank; scales and metadata left out)."""
    return tokens * top_k * hidden * 1, tokens * top_k * hidden * 2


def _wide_ep() -> dict[str, str]:
    f: dict[str, str] = {}
    expert = expert_params()
    f["wep_expert_params"] = f"{expert / 1e6:.1f}M"
    f["wep_expert_fp8_mb"] = f"{expert / MB:.1f} MB"
    f["wep_dispatch_copy_bytes"] = f"{V3_HIDDEN:,} bytes"
    f["wep_round_trip_copy_bytes"] = f"{V3_HIDDEN * 3:,} bytes"
    dispatch, combine = a2a_bytes_per_rank(DEEPEP_TOKENS_PER_RANK)
    f["wep_ll_dispatch_mb"] = f"{dispatch / MB:.2f} MB"
    f["wep_ll_combine_mb"] = f"{combine / MB:.1f} MB"
    f["wep_ll_dispatch_us_ib"] = f"{dispatch / IB_BYTES_PER_S * 1e6:.0f} us"
    f["wep_ll_combine_us_ib"] = f"{combine / IB_BYTES_PER_S * 1e6:.0f} us"
    comm = (dispatch + combine) / IB_BYTES_PER_S
    f["wep_ll_a2a_us_ib"] = f"{comm * 1e6:.0f} us"
    # Balanced routing: every rank computes as many token-expert pairs as it sends.
    pairs = DEEPEP_TOKENS_PER_RANK * V3_TOP_K
    gemm_flops = 2 * expert * pairs
    gemm = gemm_flops / H100_FP8_FLOPS
    f["wep_ll_pairs_per_rank"] = f"{pairs:,}"
    f["wep_ll_gemm_tflop"] = f"{gemm_flops / 1e12:.3f} TFLOP"
    f["wep_ll_gemm_us_fp8"] = f"{gemm * 1e6:.1f} us"
    f["wep_ll_comm_over_gemm"] = f"{comm / gemm:.1f}x"
    # With one expert per GPU (decode), the expert's FP8 weights are read once per layer.
    f["wep_expert_read_us_h100"] = f"{expert / H100_SXM.hbm_bytes_per_s * 1e6:.1f} us"
    # Node-limited routing: a token's IB traffic is one copy per node reached, not per expert.
    f["wep_node_limit_ib_saving"] = f"{V3_TOP_K / V3_MAX_NODES:.0f}x"
    f["wep_v3_intensity_flop_per_byte"] = f"{2 * expert / (V3_HIDDEN * 3):,.0f} FLOP/byte"
    f["wep_h100_fp8_ridge_ib"] = f"{H100_FP8_FLOPS / IB_BYTES_PER_S:,.0f} FLOP/byte"
    # Two-batch overlap: two half batches hide one's communication behind the other's compute.
    f["wep_tbo_serial_us"] = f"{(comm + gemm) * 1e6:.0f} us"
    # EPLB: 256 routed experts plus 32 redundant copies packed onto the GPUs of a unit.
    slots = V3_ROUTED + V3_REDUNDANT
    f["wep_prefill_slots"] = f"{slots}"
    f["wep_prefill_experts_per_gpu"] = f"{slots // PREFILL_EP}"
    f["wep_production_decode_experts_per_gpu"] = f"{slots // PRODUCTION_DECODE_EP}"
    f["wep_paper_decode_routed_gpus"] = f"{PAPER_DECODE_EP - PAPER_DECODE_SPARE}"
    per_gpu_prefill = V3_MOE_LAYERS * (slots // PREFILL_EP) * expert
    f["wep_prefill_expert_gb_per_gpu"] = f"{per_gpu_prefill / 1e9:.1f} GB"
    f["wep_decode_expert_gb_per_gpu"] = f"{V3_MOE_LAYERS * expert / 1e9:.2f} GB"
    f["wep_streams_per_gpu"] = f"{NODE_DECODE_TOKENS_PER_S / 8 / STREAM_TOKENS_PER_S:.0f}"
    f["wep_tokens_per_s_per_gpu"] = f"{NODE_DECODE_TOKENS_PER_S / 8:,.0f} tokens/s"
    # A hot expert at three times the mean load, alone on its GPU, sets the step at 3x the mean.
    f["wep_hot_expert_load"] = "3x"
    f["wep_hot_expert_efficiency"] = f"{1 / 3:.0%}"
    return f


# ---------------------------------------------------------------- context parallelism

CP_CONTEXT = 1_048_576  # "1M" tokens, 2^20
CP_GPUS, CP_NODES = 128, 16  # the Meta paper's largest run: 16 nodes of 8 H100s (TP8 inside a node)


def ring_min_block(gpu_flops: float, link_bytes_per_s: float, q_heads: int, kv_heads: int) -> float:
    """Smallest block (tokens per rank per ring step) whose attention compute hides the KV transfer.

    Per layer and step: compute 4 c^2 (q_heads hd) FLOPs (q.k and p.v, no causal skip); transfer
    2 c (kv_heads hd) elements of 2 bytes (K and V). 4 c^2 q hd / F >= 4 c kv hd / B gives
    c >= (kv / q) F / B: Ring Attention's F / B, scaled down by GQA's head ratio.
    """
    return kv_heads / q_heads * gpu_flops / link_bytes_per_s


def causal_imbalance(ranks: int) -> float:
    """Busiest rank's causal attention work over the mean, with contiguous shards: rank i sees
    i full blocks and one half block (its diagonal), so work is i + 1/2; max/mean = (2N - 1) / N."""
    return (ranks - 0.5) / (ranks / 2)


def _context_parallel() -> dict[str, str]:
    f: dict[str, str] = {}
    m = LLAMA31_405B
    for label, link in (("nvlink", NVLINK4_PER_DIRECTION), ("ib", IB_BYTES_PER_S)):
        mha = ring_min_block(H100_SXM.bf16_flops, link, 1, 1)
        f[f"cp_min_block_mha_{label}"] = f"{mha:,.0f}"
        gqa = ring_min_block(H100_SXM.bf16_flops, link, m.q_heads, m.kv_heads)
        f[f"cp_min_block_405b_{label}"] = f"{gqa:,.0f}"
    f["cp_nvlink_per_direction"] = f"{NVLINK4_PER_DIRECTION / 1e9:.0f} GB/s"
    f["cp_ib_per_direction"] = f"{IB_BYTES_PER_S / 1e9:.0f} GB/s"
    f["cp_405b_gqa_ratio"] = f"{m.q_heads // m.kv_heads}x"
    f["cp_405b_kv_kib_per_token"] = f"{m.kv_bytes(1) / KIB:g} KiB"
    f["cp_405b_kv_gib_1m"] = f"{m.kv_bytes(CP_CONTEXT) / GIB:.0f} GiB"
    f["cp_405b_kv_gib_per_node_1m"] = f"{m.kv_bytes(CP_CONTEXT) / CP_NODES / GIB:.1f} GiB"
    f["cp_405b_tokens_per_node_1m"] = f"{CP_CONTEXT // CP_NODES:,}"
    # Per layer and token: a query is q_heads x hd, K and V are 2 x kv_heads x hd (BF16).
    q_bytes = m.q_heads * m.head_dim * 2
    kv_bytes = 2 * m.kv_heads * m.head_dim * 2
    f["cp_405b_q_kib_per_token_layer"] = f"{q_bytes / KIB:g} KiB"
    f["cp_405b_kv_kib_per_token_layer"] = f"{kv_bytes / KIB:g} KiB"
    f["cp_405b_q_over_kv"] = f"{q_bytes / kv_bytes:.0f}x"
    # Pass-Q sends a query out and its partial output (the same size) back.
    f["cp_405b_q_round_trip_kib"] = f"{2 * q_bytes / KIB:g} KiB"
    f["cp_405b_pass_q_crossover"] = f"{kv_bytes / (2 * q_bytes):.2%}"
    flops = m.prefill_flops(CP_CONTEXT)
    ideal = flops / (CP_GPUS * H100_SXM.bf16_flops)
    f["cp_405b_prefill_eflop_1m"] = f"{flops / 1e18:.2f} EFLOP"
    f["cp_405b_prefill_s_peak_128"] = f"{ideal:.1f} s"
    f["cp_405b_prefill_s_peak_one_node"] = f"{flops / (8 * H100_SXM.bf16_flops):,.0f} s"
    f["cp_405b_paper_utilisation_bank"] = f"{ideal / 77:.0%}"
    attention = im.prefill_attention_flops(m.layers, m.q_heads, m.head_dim, CP_CONTEXT)
    f["cp_405b_attention_share_1m"] = f"{attention / flops:.0%}"
    # 1M against 128K tokens: the linear work shrinks by the length ratio, attention by its square.
    f["cp_len_ratio_1m_128k"] = f"{CP_CONTEXT // 131072}"
    f["cp_len_ratio_sq_1m_128k"] = f"{(CP_CONTEXT // 131072) ** 2}"
    for ranks in (4, 8, 16):
        f[f"cp_causal_imbalance_{ranks}"] = f"{causal_imbalance(ranks):.2f}x"
    return f


# ---------------------------------------------------------------- CPU launch overhead

# gpt-fast (PyTorch blog, 2023): Llama-2-7B, batch 1, A100-80GB; eager 25.5 tok/s, torch.compile
# with mode="reduce-overhead" and a static KV cache 107.0 tok/s.
GPT_FAST_EAGER, GPT_FAST_COMPILED = 25.5, 107.0
# vLLM's V0 model runner (vllm/worker/model_runner.py, 2024): decode CUDA graphs captured for
# batch sizes 1, 2, 4 and every multiple of 8 up to 256; a batch is padded up to the next one.
CAPTURE_SIZES = [1, 2, 4] + [8 * i for i in range(1, 33)]


def padded_graph_size(batch: int, sizes: list[int] = CAPTURE_SIZES) -> int:
    """The captured batch size a decode batch of `batch` rows is padded up to and replayed at."""
    for size in sorted(sizes):
        if size >= batch:
            return size
    raise ValueError(f"batch={batch} is above the largest captured size {max(sizes)}: it runs eagerly")


def _cpu_overhead() -> dict[str, str]:
    f: dict[str, str] = {}
    read = LLAMA2_7B.decode_read_bytes()
    floor = read / A100_80GB.hbm_bytes_per_s
    f["cpu_llama2_7b_read_gb"] = f"{read / 1e9:.1f} GB"
    f["cpu_llama2_7b_floor_ms_a100"] = f"{floor * 1e3:.2f} ms"
    f["cpu_llama2_7b_ceiling_tps_a100"] = f"{1 / floor:.0f} tokens/s"
    eager, compiled = 1 / GPT_FAST_EAGER, 1 / GPT_FAST_COMPILED
    f["cpu_eager_ms_per_token"] = f"{eager * 1e3:.1f} ms"
    f["cpu_compiled_ms_per_token"] = f"{compiled * 1e3:.2f} ms"
    f["cpu_eager_overhead_ms"] = f"{(eager - floor) * 1e3:.1f} ms"
    f["cpu_eager_overhead_ms_per_layer"] = f"{(eager - floor) / LLAMA2_7B.layers * 1e3:.2f} ms"
    f["cpu_eager_gpu_busy"] = f"{floor / eager:.0%}"
    f["cpu_compiled_mbu"] = f"{read * GPT_FAST_COMPILED / A100_80GB.hbm_bytes_per_s:.0%}"
    f["cpu_compiled_speedup"] = f"{GPT_FAST_COMPILED / GPT_FAST_EAGER:.1f}x"
    # Llama-3-8B on an H100: the GPU's floor per step that a launch loop has to keep up with.
    floor_h100 = LLAMA3_8B.decode_read_bytes() / H100_SXM.hbm_bytes_per_s
    f["cpu_llama3_8b_floor_ms_h100"] = f"{floor_h100 * 1e3:.2f} ms"
    f["cpu_llama3_8b_floor_us_per_layer_h100"] = f"{floor_h100 / LLAMA3_8B.layers * 1e6:.0f} us"
    # The same step split eight ways by tensor parallelism: each GPU reads an eighth per layer.
    f["cpu_llama3_8b_us_per_layer_tp8"] = f"{floor_h100 / LLAMA3_8B.layers / 8 * 1e6:.1f} us"
    f["cpu_llama3_8b_allreduces_per_step"] = str(2 * LLAMA3_8B.layers)
    f["cpu_pad_17"] = str(padded_graph_size(17))
    f["cpu_pad_17_share"] = f"{(padded_graph_size(17) - 17) / padded_graph_size(17):.0%}"
    f["cpu_capture_count"] = str(len(CAPTURE_SIZES))
    f["cpu_capture_max"] = str(CAPTURE_SIZES[-1])
    return f


# ---------------------------------------------------------------- multi-LoRA serving

PCIE5_PER_DIRECTION = 64e9  # H100 data sheet: PCIe Gen5 128 GB/s, both directions together
LORA_BATCH_ADAPTERS = 32
LORA_SLICE_BYTES = 10e9  # a scenario: HBM set aside for resident adapters


def lora_params(model: ModelShape, rank: int, modules: tuple[str, ...]) -> int:
    """Parameters of a LoRA adapter: each adapted (d_in x d_out) matrix gains A (d_in x r) and
    B (r x d_out), r (d_in + d_out) parameters, in every layer."""
    d, ff = model.hidden, model.intermediate
    q, kv = model.q_heads * model.head_dim, model.kv_heads * model.head_dim
    shapes = {
        "q": (d, q),
        "k": (d, kv),
        "v": (d, kv),
        "o": (q, d),
        "gate": (d, ff),
        "up": (d, ff),
        "down": (ff, d),
    }
    return model.layers * sum(rank * (shapes[name][0] + shapes[name][1]) for name in modules)


ALL_LINEAR = ("q", "k", "v", "o", "gate", "up", "down")


def _lora() -> dict[str, str]:
    f: dict[str, str] = {}
    m = LLAMA3_8B
    r16 = lora_params(m, 16, ALL_LINEAR)
    f["lora_llama3_8b_r16_params"] = f"{r16 / 1e6:.1f}M"
    f["lora_llama3_8b_r16_mb"] = f"{r16 * 2 / MB:.1f} MB"
    f["lora_llama3_8b_r64_mb"] = f"{lora_params(m, 64, ALL_LINEAR) * 2 / MB:.1f} MB"
    f["lora_llama3_8b_r8_qv_mb"] = f"{lora_params(m, 8, ('q', 'v')) * 2 / MB:.1f} MB"
    base = m.decode_read_bytes()
    f["lora_llama3_8b_base_gb"] = f"{base / 1e9:.1f} GB"
    f["lora_r16_share_of_base"] = f"{r16 * 2 / base:.2%}"
    batch_bytes = LORA_BATCH_ADAPTERS * r16 * 2
    f["lora_batch32_gb"] = f"{batch_bytes / 1e9:.2f} GB"
    f["lora_batch32_extra"] = f"{batch_bytes / base:.0%}"
    f["lora_base_ms_h100"] = f"{base / H100_SXM.hbm_bytes_per_s * 1e3:.2f} ms"
    f["lora_batch32_ms_h100"] = f"{batch_bytes / H100_SXM.hbm_bytes_per_s * 1e3:.2f} ms"
    f["lora_r16_swap_ms_pcie5"] = f"{r16 * 2 / PCIE5_PER_DIRECTION * 1e3:.2f} ms"
    # A merged adapter (W + BA) costs nothing per token; an unmerged one adds 2 x its params FLOPs.
    f["lora_r16_flop_share"] = f"{r16 / m.matmul_params():.2%}"
    # How many rank-16 adapters a slice of HBM (a scenario's choice) holds.
    f["lora_slots_10gb"] = f"{int(LORA_SLICE_BYTES // (r16 * 2))}"
    f["lora_slice_gb"] = f"{LORA_SLICE_BYTES / 1e9:.0f} GB"
    f["lora_h100_gb"] = f"{H100_SXM.hbm_bytes / 1e9:.0f} GB"
    return f


# ---------------------------------------------------------------- structured output

SO_BATCH, SO_GAMMA = 256, 4
XGRAMMAR_US_PER_TOKEN = 40  # "under 40 us per token" for JSON Schema (XGrammar's evaluation)


def bitmask_bytes(vocab: int) -> int:
    """One sequence's next-token mask: a bit per token, packed into int32 words."""
    return im.ceil_div(vocab, 32) * 4


def _structured() -> dict[str, str]:
    f: dict[str, str] = {}
    vocab = LLAMA3_8B.vocab
    mask = bitmask_bytes(vocab)
    f["so_llama3_vocab"] = f"{vocab:,}"
    f["so_mask_words"] = f"{im.ceil_div(vocab, 32):,}"
    f["so_mask_bytes"] = f"{mask:,} bytes"
    f["so_mask_batch_mb"] = f"{SO_BATCH * mask / MB:.2f} MB"
    f["so_logits_kb_fp32"] = f"{vocab * 4 / 1e3:.0f} KB"
    f["so_context_dependent_share"] = f"{1134 / vocab:.2%}"
    floor = LLAMA3_8B.decode_read_bytes() / H100_SXM.hbm_bytes_per_s
    f["so_llama3_8b_step_ms_h100"] = f"{floor * 1e3:.2f} ms"
    f["so_xgrammar_share_of_step"] = f"{XGRAMMAR_US_PER_TOKEN * 1e-6 / floor:.1%}"
    serial = SO_BATCH * XGRAMMAR_US_PER_TOKEN * 1e-6
    f["so_batch_serial_ms"] = f"{serial * 1e3:.2f} ms"
    f["so_batch_serial_over_step"] = f"{serial / floor:.1f}x"
    f["so_spec_masks_bytes"] = f"{(SO_GAMMA + 1) * mask:,} bytes"
    return f


def figures() -> dict[str, str]:
    f: dict[str, str] = {}
    for part in (_wide_ep(), _context_parallel(), _cpu_overhead(), _lora(), _structured()):
        f.update(part)
    return f
