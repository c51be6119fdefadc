"""Figures of the 2026 serving topics: tiered KV storage and KV-aware routing (`tier_`), reasoning
models and RL rollouts (`reason_`), the LM head over large vocabularies (`vocab_`). The system
design figures from QPS and SLOs (`design_`) are app/content/figures_2026_design.py's, built on
this module's helpers.

Merged into app.content.figures.compute_figures(); a name defined twice is an error. The bank's
conventions hold: prefill FLOPs are ModelShape.prefill_flops (every new token through every layer,
causal attention, the LM head on the last position); a decode step reads the multiplied weights
(`decode_read_bytes`, no input embedding table) plus every sequence's cache. Link rates are line
rates per direction, GPU rates are the data sheets' dense peaks, so every time is a floor. Inputs
that are assumptions (a price, an SSD's read rate, an efficiency) are declared as figures too, so
a card states them and cannot drift from the arithmetic.
"""

from __future__ import annotations

import math

from app.content.figures_kernels import PCIE5_X16_ONE_WAY, VLLM_GPU_MEMORY_UTILIZATION
from app.content.figures_serving import IB_NDR_400_BYTES_PER_S
from app.content.hardware import GPU, H100_SXM, H200_SXM, NVLINK4_BYTES_PER_S
from app.content.shapes import GEMMA2_9B, GIB, KIB, LLAMA2_7B, LLAMA3_8B, LLAMA31_70B, ModelShape

MB = 10**6

# Qwen/Qwen3-32B config.json: 64 layers, hidden 5120, 64 query heads and 8 KV heads of head_dim
# 128 (so q is 5120 x 8192), intermediate 25600, vocab 151936, untied. Its per-head q_norm and
# k_norm (2 x 128 weights a layer, 16,384 in all) are left out: they change no printed figure.
QWEN3_32B = ModelShape("Qwen3-32B", 64, 64, 8, 5120, 151936, 25600, head_dim_override=128)
# meta-llama/Llama-3.2-3B config.json: 28 layers, hidden 3072, 24 heads, 8 KV heads of 128,
# intermediate 8192, vocab 128256, tie_word_embeddings true.
LLAMA32_3B = ModelShape("Llama-3.2-3B", 28, 24, 8, 3072, 128256, 8192, tied_embeddings=True)
# google/gemma-2-9b config.json (the same shape as figures.GEMMA2_9B): vocab 256000, hidden 3584.
GEMMA2_VOCAB, GEMMA2_HIDDEN = 256000, 3584

NVLINK4_ONE_WAY = NVLINK4_BYTES_PER_S / 2  # 900 GB/s both directions per H100 -> 450 GB/s each way
ASSUMED_NODE_SSD_BYTES_PER_S = 25e9  # a few NVMe Gen5 drives striped in one node: an assumption
ASSUMED_NODE_DRAM_BYTES = 2 * 10**12  # host memory of one 8-GPU server set aside for KV: an assumption
ASSUMED_EFFICIENCY = 0.5  # share of peak bandwidth (decode) and peak FLOP/s (prefill) reached


def cache_load_seconds(model: ModelShape, tokens: int, bytes_per_s: float, shards: int = 1) -> float:
    """Time to move a `tokens`-long cache over links of `bytes_per_s` each, `shards` in parallel
    (tensor parallelism splits the KV heads, so each GPU loads its own 1/shards over its own link)."""
    return model.kv_bytes(tokens) / shards / bytes_per_s


def recompute_seconds(model: ModelShape, tokens: int, gpu: GPU = H100_SXM, gpus: int = 1) -> float:
    """Compute floor on prefilling `tokens` again at the GPUs' dense BF16 peak."""
    return model.prefill_flops(tokens) / (gpus * gpu.bf16_flops)


def break_even_bytes_per_s(model: ModelShape, tokens: int, gpu: GPU = H100_SXM) -> float:
    """Link rate per GPU at which loading a cache takes as long as recomputing it at peak.

    Both sides split the same way under tensor parallelism, so the ratio is per GPU: cache bytes
    per token over prefill seconds per token (averaged over a `tokens`-long prefix)."""
    return model.kv_bytes(tokens) / recompute_seconds(model, tokens, gpu)


def _ms(seconds: float, places: int = 1) -> str:
    return f"{seconds * 1e3:.{places}f} ms"


def _gb(n: float, places: int = 2) -> str:
    return f"{n / 1e9:.{places}f} GB"


def _x(v: float, places: int = 0) -> str:
    return f"{v:.{places}f}x"


def figures() -> dict[str, str]:
    f: dict[str, str] = {}
    f.update(_tiers())
    f.update(_routing())
    f.update(_reasoning())
    f.update(_rollouts())
    f.update(_vocab())
    return f


PREFIX = 32768  # a long shared prefix: a code base or a document pasted into every request


def _tiers() -> dict[str, str]:
    f: dict[str, str] = {}
    m = LLAMA31_70B
    cache = m.kv_bytes(PREFIX)
    f["tier_70b_kib_per_token"] = f"{m.kv_bytes(1) / KIB:g} KiB"
    f["tier_70b_cache_32k_gb"] = _gb(cache)
    f["tier_70b_cache_32k_gib"] = f"{cache / GIB:.2f} GiB"
    recompute = recompute_seconds(m, PREFIX, gpus=8)
    f["tier_70b_recompute_32k_ms_tp8"] = _ms(recompute, 0)
    links = {
        "nvlink": NVLINK4_ONE_WAY,  # from a peer GPU's HBM in the same node
        "pcie": PCIE5_X16_ONE_WAY,  # from pinned host DRAM
        "rdma": IB_NDR_400_BYTES_PER_S,  # from another node's DRAM, one 400 Gb/s NIC per GPU
    }
    for label, rate in links.items():
        seconds = cache_load_seconds(m, PREFIX, rate, shards=8)
        f[f"tier_70b_{label}_32k_ms_tp8"] = _ms(seconds)
        f[f"tier_70b_{label}_vs_recompute"] = _x(recompute / seconds)
    f["tier_pcie_gb_s"] = f"{PCIE5_X16_ONE_WAY / 1e9:.0f} GB/s"
    f["tier_nvlink_gb_s"] = f"{NVLINK4_ONE_WAY / 1e9:.0f} GB/s"
    f["tier_rdma_gb_s"] = f"{IB_NDR_400_BYTES_PER_S / 1e9:.0f} GB/s"
    ssd = cache / ASSUMED_NODE_SSD_BYTES_PER_S  # one node's drives feed all eight GPUs
    f["tier_assumed_ssd_gb_s"] = f"{ASSUMED_NODE_SSD_BYTES_PER_S / 1e9:.0f} GB/s"
    f["tier_70b_ssd_32k_ms"] = _ms(ssd, 0)
    f["tier_70b_ssd_vs_recompute"] = _x(recompute / ssd, 1)
    # Break-even link rate per GPU: above it, loading beats recomputing even at peak FLOP/s.
    for key, model, tokens in (
        ("70b_32k", m, PREFIX),
        ("70b_4k", m, 4096),
        ("llama3_8b_4k", LLAMA3_8B, 4096),
        ("llama2_7b_4k", LLAMA2_7B, 4096),
    ):
        f[f"tier_break_even_{key}"] = f"{break_even_bytes_per_s(model, tokens) / 1e9:.1f} GB/s"
    f["tier_70b_vs_7b_prefill_flops"] = _x(m.prefill_flops(4096) / LLAMA2_7B.prefill_flops(4096), 1)
    f["tier_llama2_7b_kib_per_token"] = f"{LLAMA2_7B.kv_bytes(1) / KIB:g} KiB"
    f["tier_llama3_8b_kib_per_token"] = f"{LLAMA3_8B.kv_bytes(1) / KIB:g} KiB"
    f["tier_llama2_7b_pcie_margin"] = _x(PCIE5_X16_ONE_WAY / break_even_bytes_per_s(LLAMA2_7B, 4096), 1)
    f["tier_70b_pcie_margin"] = _x(PCIE5_X16_ONE_WAY / break_even_bytes_per_s(m, PREFIX))
    # What one 8-GPU node holds of 32k-token 70B prefixes, tier by tier.
    weights = m.dense_params() * 2  # BF16 footprint, embedding table included
    hbm_pool = VLLM_GPU_MEMORY_UTILIZATION * 8 * H100_SXM.hbm_bytes - weights
    f["tier_70b_weights_gb"] = _gb(weights, 1)
    f["tier_node_hbm_pool_gb"] = _gb(hbm_pool, 0)
    f["tier_node_hbm_prefixes"] = f"{math.floor(hbm_pool / cache)}"
    f["tier_assumed_dram_tb"] = f"{ASSUMED_NODE_DRAM_BYTES / 1e12:.0f} TB"
    f["tier_node_dram_prefixes"] = f"{math.floor(ASSUMED_NODE_DRAM_BYTES / cache)}"
    return f


ROUTE_REPLICAS, ROUTE_HISTORY, ROUTE_TURN = 8, 8000, 200  # a chat turn on top of its history


def _routing() -> dict[str, str]:
    f: dict[str, str] = {}
    n, history, turn = ROUTE_REPLICAS, ROUTE_HISTORY, ROUTE_TURN
    hit = 1 / n
    expected = hit * turn + (1 - hit) * (history + turn)
    f["tier_route_hit_random"] = f"{hit:.1%}"
    f["tier_route_expected_tokens"] = f"{expected:,.0f}"
    f["tier_route_tokens_ratio"] = _x(expected / turn)
    m = LLAMA3_8B
    cold = m.prefill_flops(history + turn) / H100_SXM.bf16_flops
    warm = m.prefill_flops(history + turn, cached=history) / H100_SXM.bf16_flops
    f["tier_route_cold_ms"] = _ms(cold)
    f["tier_route_warm_ms"] = _ms(warm, 2)
    f["tier_route_expected_ms"] = _ms(hit * warm + (1 - hit) * cold)
    return f


REASON_PROMPT, REASON_OUTPUT = 1000, 30000
CHAT_PROMPT, CHAT_OUTPUT = 1000, 500


def decode_seconds(model: ModelShape, gpu: GPU, batch: int, prompt: int, output: int) -> float:
    """Bandwidth floor on generating `output` tokens for `batch` sequences in lockstep: step t reads
    the weights once and every sequence's cache of prompt + t tokens."""
    weights = model.decode_read_bytes()
    per_token = model.kv_bytes(1)
    # Sum over t = 0 .. output-1 of (weights + batch * (prompt + t) * per_token), in closed form.
    cache_tokens = batch * (output * prompt + output * (output - 1) / 2)
    return (output * weights + cache_tokens * per_token) / gpu.hbm_bytes_per_s


def reasoning_batch(model: ModelShape = QWEN3_32B, gpu: GPU = H200_SXM) -> int:
    """Sequences whose cache fits at its full prompt + output length beside the BF16 weights."""
    pool = VLLM_GPU_MEMORY_UTILIZATION * gpu.hbm_bytes - model.dense_params() * 2
    return math.floor(pool / model.kv_bytes(REASON_PROMPT + REASON_OUTPUT))


def _reasoning() -> dict[str, str]:
    f: dict[str, str] = {}
    m, gpu = QWEN3_32B, H200_SXM
    per_token = m.kv_bytes(1)
    full = REASON_PROMPT + REASON_OUTPUT
    chat = CHAT_PROMPT + CHAT_OUTPUT
    weights = m.dense_params() * 2
    pool = VLLM_GPU_MEMORY_UTILIZATION * gpu.hbm_bytes - weights
    f["reason_qwen3_32b_params"] = f"{m.dense_params() / 1e9:.1f}B"
    f["reason_qwen3_32b_kib_per_token"] = f"{per_token / KIB:g} KiB"
    f["reason_qwen3_32b_gib_31k"] = f"{m.kv_bytes(full) / GIB:.2f} GiB"
    f["reason_qwen3_32b_weights_gb"] = _gb(weights, 1)
    f["reason_h200_pool_gb"] = _gb(pool, 1)
    reason_batch = reasoning_batch(m, gpu)
    chat_batch = math.floor(pool / m.kv_bytes(chat))
    f["reason_batch_31k"] = f"{reason_batch}"
    f["reason_batch_chat"] = f"{chat_batch}"
    f["reason_batch_ratio"] = _x(chat_batch / reason_batch)
    # Throughput floors: a whole cohort generates in lockstep from its prompt to its last token.
    reason_time = decode_seconds(m, gpu, reason_batch, REASON_PROMPT, REASON_OUTPUT)
    chat_time = decode_seconds(m, gpu, chat_batch, CHAT_PROMPT, CHAT_OUTPUT)
    reason_tps = reason_batch * REASON_OUTPUT / reason_time
    chat_tps = chat_batch * CHAT_OUTPUT / chat_time
    f["reason_tps_h200"] = f"{reason_tps:,.0f} tokens/s"
    f["reason_chat_tps_h200"] = f"{chat_tps:,.0f} tokens/s"
    f["reason_tps_ratio"] = _x(chat_tps / reason_tps, 1)
    # Latency of one answer: batch 1, and inside the full cohort.
    alone = decode_seconds(m, gpu, 1, REASON_PROMPT, REASON_OUTPUT)
    f["reason_read_gb"] = _gb(m.decode_read_bytes(), 1)
    read = m.decode_read_bytes()
    f["reason_first_step_ms"] = _ms((read + REASON_PROMPT * per_token) / gpu.hbm_bytes_per_s, 2)
    f["reason_last_step_ms"] = _ms((read + full * per_token) / gpu.hbm_bytes_per_s, 2)
    f["reason_answer_s_batch1"] = f"{alone:.0f} s"
    f["reason_answer_min_batch1"] = f"{alone / 60:.1f} min"
    f["reason_answer_min_cohort"] = f"{reason_time / 60:.1f} min"
    f["reason_chat_answer_s"] = f"{chat_time:.1f} s"
    last_cohort = m.decode_read_bytes() + reason_batch * full * per_token
    f["reason_cohort_last_step_ms"] = _ms(last_cohort / gpu.hbm_bytes_per_s, 2)
    f["reason_cohort_cache_share_last"] = f"{reason_batch * full * per_token / last_cohort:.0%}"
    # A preempted thinker comes back by recomputation: one prefill over all it has so far.
    f["reason_recompute_31k_ms"] = _ms(recompute_seconds(m, full, gpu), 0)
    return f


RL_GROUP, RL_SHORT, RL_CAP, RL_TAIL_SHARE = 1024, 4096, 32768, 0.05
RL_SEGMENT = 8192  # partial rollouts: tokens a rollout may add per iteration before it is parked
RL_LOGPROB_GAP, RL_TOKENS = 0.001, 30000  # nats per token between sampler and trainer; a long rollout


def _rollouts() -> dict[str, str]:
    f: dict[str, str] = {}
    tail = round(RL_GROUP * RL_TAIL_SHARE)
    short = RL_GROUP - tail
    tokens = short * RL_SHORT + tail * RL_CAP
    f["reason_rl_tail_rollouts"] = f"{tail}"
    f["reason_rl_short_rollouts"] = f"{short}"
    f["reason_rl_tail_share"] = f"{RL_TAIL_SHARE:.0%}"
    f["reason_rl_tokens"] = f"{tokens:,}"
    f["reason_rl_occupancy"] = f"{tokens / (RL_GROUP * RL_CAP):.0%}"
    f["reason_rl_tail_steps_share"] = f"{(RL_CAP - RL_SHORT) / RL_CAP:.1%}"
    f["reason_rl_tail_token_share"] = f"{tail * RL_CAP / tokens:.0%}"
    f["reason_rl_segment_steps_ratio"] = _x(RL_CAP / RL_SEGMENT)
    # Weight sync after each policy update: Qwen3-32B's BF16 weights into a rollout engine.
    weights = QWEN3_32B.dense_params() * 2
    nic = weights / IB_NDR_400_BYTES_PER_S
    f["reason_sync_weights_gb"] = _gb(weights, 1)
    f["reason_sync_nic_s"] = f"{nic:.2f} s"
    f["reason_sync_nvlink_ms"] = _ms(weights / NVLINK4_ONE_WAY, 0)
    f["reason_sync_nic_tp8_ms"] = _ms(nic / 8, 0)  # eight GPUs each pull their shard over their NIC
    cohort = decode_seconds(QWEN3_32B, H200_SXM, reasoning_batch(), REASON_PROMPT, REASON_OUTPUT)
    f["reason_sync_share_of_rollout"] = f"{nic / cohort:.2%}"
    # bfloat16 keeps 8 significant bits: the gap between 1 and the next value is 2^-7.
    f["reason_bf16_eps"] = f"{2**-7:.2%}"
    f["reason_seq_log_gap"] = f"{RL_LOGPROB_GAP * RL_TOKENS:.0f}"
    f["reason_token_ratio_gap"] = f"{math.exp(RL_LOGPROB_GAP):.4f}"
    return f


def head_params(model: ModelShape) -> int:
    """The LM head's matrix, vocab x hidden (the embedding table itself when tied)."""
    return model.vocab * model.hidden


def _vocab() -> dict[str, str]:
    f: dict[str, str] = {}
    for key, model in (
        ("llama32_3b", LLAMA32_3B),
        ("llama3_8b", LLAMA3_8B),
        ("qwen3_32b", QWEN3_32B),
        ("llama31_70b", LLAMA31_70B),
        ("gemma2_9b", GEMMA2_9B),
    ):
        f[f"vocab_head_share_{key}"] = f"{head_params(model) / model.matmul_params():.1%}"
        f[f"vocab_head_params_{key}"] = f"{head_params(model) / 1e6:,.0f}M"
    gemma_head = GEMMA2_VOCAB * GEMMA2_HIDDEN
    f["vocab_gemma2_head_gb"] = _gb(gemma_head * 2)
    f["vocab_gemma2_head_ms_h100"] = _ms(gemma_head * 2 / H100_SXM.hbm_bytes_per_s, 2)
    f["vocab_gemma2_head_gflop_per_token"] = f"{2 * gemma_head / 1e9:.2f} GFLOP"
    # Logits in fp32: every position of a 32k rollout (Qwen3) against the last position only.
    rollout = 32768
    f["vocab_qwen3_logits_32k_gb"] = _gb(rollout * QWEN3_32B.vocab * 4, 1)
    f["vocab_qwen3_logits_row_kb"] = f"{QWEN3_32B.vocab * 4 / 1e3:.0f} KB"
    f["vocab_llama3_logits_4k_gb"] = _gb(4096 * LLAMA3_8B.vocab * 4)
    # Sampling over a 256k vocabulary at batch 256: the logits and one pass over them.
    batch = 256
    logits = batch * GEMMA2_VOCAB * 4
    f["vocab_row_mb_256k"] = f"{GEMMA2_VOCAB * 4 / MB:.3f} MB"
    f["vocab_batch_logits_mb"] = f"{logits / MB:.0f} MB"
    f["vocab_pass_us_h100"] = f"{logits / H100_SXM.hbm_bytes_per_s * 1e6:.0f} us"
    # An LSD radix sort of 32-bit keys with 32-bit indices, 8 bits a pass: 4 passes, each reading and
    # writing 8 bytes per element, against one 4-byte read for a threshold pass.
    f["vocab_radix_traffic_ratio"] = _x(4 * 2 * 8 / 4)
    # Vocabulary-parallel head under TP8 (Llama-3.1-70B): gather every logit, or each shard's top-k.
    tp, k = 8, 50
    f["vocab_tp8_rows_per_gpu"] = f"{LLAMA31_70B.vocab // tp:,}"
    all_logits = batch * LLAMA31_70B.vocab * 4
    local_topk = batch * tp * k * (4 + 4)  # value and index per candidate
    f["vocab_tp8_gather_mb"] = f"{all_logits / MB:.0f} MB"
    f["vocab_tp8_topk_kb"] = f"{local_topk / 1e3:.0f} KB"
    f["vocab_tp8_gather_ms"] = _ms(all_logits * (tp - 1) / tp / NVLINK4_ONE_WAY, 2)
    f["vocab_tp8_gather_ratio"] = _x(all_logits / local_topk)
    # A draft head: EAGLE's one decoder layer against Llama-3-8B's full-vocabulary head.
    m = LLAMA3_8B
    layer = m.layer_params() // m.layers
    f["vocab_llama3_layer_params"] = f"{layer / 1e6:.0f}M"
    f["vocab_llama3_head_vs_layer"] = _x(head_params(m) / layer, 1)
    f["vocab_frspec_subset_share"] = f"{32768 / m.vocab:.1%}"
    return f
