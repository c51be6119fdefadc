"""System-design figures (`design_`): a chat fleet for Llama-3.1-70B sized from QPS and SLOs, its
cost per million tokens, the weight-read floor per tensor-parallel degree, an offline job, and an
agent's growing context.

Part of figures_2026_serving (its figures() merges these). The scenario's inputs (QPS, lengths,
SLOs, the assumed efficiency and price) are constants here and declared as figures, so a card
states them. FP8 weights and FP8 math, a BF16 cache, H100 SXM nodes of eight GPUs.
"""

from __future__ import annotations

import math

from app.content.figures_2026 import decode_weight_bytes
from app.content.figures_2026_serving import (
    ASSUMED_EFFICIENCY,
    ASSUMED_NODE_DRAM_BYTES,
    NVLINK4_ONE_WAY,
    _ms,
    _x,
    cache_load_seconds,
)
from app.content.figures_kernels import PCIE5_X16_ONE_WAY, VLLM_GPU_MEMORY_UTILIZATION
from app.content.figures_serving import ASSUMED_H100_DOLLARS_PER_HOUR, IB_NDR_400_BYTES_PER_S
from app.content.hardware import H100_FP8_FLOPS, H100_SXM
from app.content.shapes import LLAMA31_70B

MB = 10**6


def _gb(n: float, places: int = 2) -> str:
    return f"{n / 1e9:.{places}f} GB"


# The design scenario: a chat product on Llama-3.1-70B in FP8 (weights and math), BF16 cache, H100s.
QPS, PROMPT, OUTPUT = 100, 2000, 400
TTFT_SLO_S, TPOT_SLO_S = 1.0, 0.040
TP = 8
TPOT_TIGHT_S = 0.020  # the follow-up's tighter target
PARALLEL_TPOT_S = 0.025  # the parallelism card's target


def figures() -> dict[str, str]:
    f = _fleet()
    f.update(agent_figures())
    return f


def _fleet() -> dict[str, str]:
    f: dict[str, str] = {}
    m = LLAMA31_70B
    f["design_prompt_tok_s"] = f"{QPS * PROMPT:,} tokens/s"
    f["design_output_tok_s"] = f"{QPS * OUTPUT:,} tokens/s"
    f["design_ttft_slo"] = f"{TTFT_SLO_S:.0f} s"
    f["design_tpot_slo"] = _ms(TPOT_SLO_S, 0)
    f["design_assumed_efficiency"] = f"{ASSUMED_EFFICIENCY:.0%}"
    f["design_assumed_price"] = f"${ASSUMED_H100_DOLLARS_PER_HOUR:.2f}"
    # Decode: one TP8 replica, FP8 weights; the rest of 90% of HBM holds caches.
    read = decode_weight_bytes(m, 8)
    footprint = m.dense_params()  # 1 byte per parameter
    per_token = m.kv_bytes(1)
    pool = VLLM_GPU_MEMORY_UTILIZATION * TP * H100_SXM.hbm_bytes - footprint
    batch = math.floor(pool / ((PROMPT + OUTPUT) * per_token))  # room for every sequence's last token
    mean_context = PROMPT + OUTPUT / 2
    step = (read + batch * mean_context * per_token) / (TP * H100_SXM.hbm_bytes_per_s) / ASSUMED_EFFICIENCY
    f["design_fp8_weights_gb"] = _gb(footprint, 1)
    f["design_replica_pool_gb"] = _gb(pool, 0)
    f["design_replica_batch"] = f"{batch}"
    f["design_step_ms"] = _ms(step)
    in_flight = QPS * OUTPUT * step  # Little's law: arrival rate x time each request spends decoding
    f["design_in_flight"] = f"{in_flight:,.0f}"
    f["design_in_flight_cache_tb"] = f"{in_flight * mean_context * per_token / 1e12:.2f} TB"
    replicas = math.ceil(in_flight / batch)
    batch1_step = (read + mean_context * per_token) / (TP * H100_SXM.hbm_bytes_per_s) / ASSUMED_EFFICIENCY
    f["design_full_vs_batch1_tps"] = _x((batch / step) / (1 / batch1_step))
    # A tighter TPOT: the largest batch whose step still fits, and Little's law at that step.
    budget = TPOT_TIGHT_S * ASSUMED_EFFICIENCY * TP * H100_SXM.hbm_bytes_per_s - read
    tight_batch = math.floor(budget / (mean_context * per_token))
    tight_in_flight = QPS * OUTPUT * TPOT_TIGHT_S
    f["design_tpot_tight"] = _ms(TPOT_TIGHT_S, 0)
    f["design_tight_batch"] = f"{tight_batch}"
    f["design_tight_in_flight"] = f"{tight_in_flight:,.0f}"
    f["design_tight_replicas"] = f"{math.ceil(tight_in_flight / tight_batch)}"
    f["design_tight_replica_tps"] = f"{tight_batch / TPOT_TIGHT_S:,.0f} tokens/s"
    decode_gpus = replicas * TP
    f["design_replica_tps"] = f"{batch / step:,.0f} tokens/s"
    f["design_decode_replicas"] = f"{replicas}"
    f["design_decode_gpus"] = f"{decode_gpus}"
    # Prefill: FP8 math at the assumed efficiency, whole TP8 nodes.
    prefill_flop_s = QPS * m.prefill_flops(PROMPT)
    per_gpu = H100_FP8_FLOPS * ASSUMED_EFFICIENCY
    prefill_gpus = math.ceil(prefill_flop_s / per_gpu / TP) * TP
    f["design_prefill_pflop_s"] = f"{prefill_flop_s / 1e15:.1f} PFLOP/s"
    f["design_prefill_gpus_exact"] = f"{prefill_flop_s / per_gpu:.1f}"
    f["design_prefill_gpus"] = f"{prefill_gpus}"
    f["design_prefill_ms_tp8"] = _ms(m.prefill_flops(PROMPT) / (TP * per_gpu))
    f["design_kv_transfer_ms"] = _ms(cache_load_seconds(m, PROMPT, IB_NDR_400_BYTES_PER_S, shards=TP), 2)
    total = decode_gpus + prefill_gpus
    f["design_total_gpus"] = f"{total}"
    price = ASSUMED_H100_DOLLARS_PER_HOUR
    f["design_dollars_per_hour"] = f"${total * price:,.0f}"
    out_per_hour = QPS * OUTPUT * 3600 / 1e6  # million tokens
    in_per_hour = QPS * PROMPT * 3600 / 1e6
    f["design_output_m_per_hour"] = f"{out_per_hour:,.0f} million"
    f["design_input_m_per_hour"] = f"{in_per_hour:,.0f} million"
    f["design_cost_per_m_output"] = f"${decode_gpus * price / out_per_hour:.2f}"
    f["design_cost_per_m_input"] = f"${prefill_gpus * price / in_per_hour:.3f}"
    blended = total * price / (out_per_hour + in_per_hour)
    f["design_cost_per_m_blended"] = f"${blended:.3f}"
    cost_out = decode_gpus * price / out_per_hour
    cost_in = prefill_gpus * price / in_per_hour
    all_in = total * price / out_per_hour  # the whole fleet charged to its output tokens
    f["design_cost_per_m_output_all_in"] = f"${all_in:.2f}"
    f["design_cost_per_m_output_all_in_half_load"] = f"${2 * all_in:.2f}"
    f["design_output_vs_input_cost"] = _x(cost_out / cost_in, 1)
    f["design_cost_per_m_blended_half_load"] = f"${2 * blended:.3f}"  # a fleet sized for peak, run at half
    # Parallelism: the weight-read floor of one decode step at batch 1, per TP degree.
    bf16 = m.decode_read_bytes()
    f["design_bf16_weights_gb"] = _gb(m.dense_params() * 2, 1)
    for tp in (1, 2, 4, 8):
        f[f"design_floor_fp8_tp{tp}"] = _ms(read / tp / H100_SXM.hbm_bytes_per_s)
        f[f"design_floor_bf16_tp{tp}"] = _ms(bf16 / tp / H100_SXM.hbm_bytes_per_s)
    f["design_parallel_tpot"] = _ms(PARALLEL_TPOT_S, 0)
    f["design_nvlink_vs_nic"] = _x(NVLINK4_ONE_WAY / IB_NDR_400_BYTES_PER_S)
    # Tensor parallelism's price: two all-reduces a layer of batch x hidden BF16 activations.
    ar_batch = 64
    ar_bytes = 2 * m.layers * ar_batch * m.hidden * 2
    ring = 2 * (TP - 1) / TP  # a ring all-reduce sends and receives this many times the buffer
    f["design_allreduce_mb_b64"] = f"{ar_bytes / MB:.0f} MB"
    f["design_allreduce_ms_b64"] = _ms(ar_bytes * ring / NVLINK4_ONE_WAY, 2)
    f["design_allreduces_per_step"] = f"{2 * m.layers}"
    # Offline: a billion output tokens a day, no latency SLO, the same replica at its memory limit.
    daily = 1e9
    need = daily / 86400
    f["design_offline_tok_s"] = f"{need:,.0f} tokens/s"
    f["design_offline_replicas"] = f"{math.ceil(need / (batch / step))}"
    offline_prefill = need * PROMPT / OUTPUT * m.prefill_flops(PROMPT) / PROMPT
    offline_prefill_gpus = offline_prefill / per_gpu
    offline_decode_gpus = need / (batch / step) * TP
    f["design_offline_prefill_gpus"] = f"{offline_prefill_gpus:.1f}"
    f["design_offline_decode_gpus"] = f"{offline_decode_gpus:.1f}"
    offline_total = offline_prefill_gpus + offline_decode_gpus
    f["design_offline_gpus"] = f"{offline_total:.1f}"
    f["design_offline_cost_per_m"] = f"${offline_total * 24 * price / (daily / 1e6):.2f}"
    return f


# An agent session on the same replica: a long context that grows by a tool result each turn.
AGENT_CONTEXT, AGENT_TURN, AGENT_OUTPUT = 50000, 2000, 500


def agent_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    m = LLAMA31_70B
    per_gpu = H100_FP8_FLOPS * ASSUMED_EFFICIENCY
    full = AGENT_CONTEXT + AGENT_TURN + AGENT_OUTPUT
    cache = m.kv_bytes(full)
    f["design_agent_cache_gb"] = _gb(cache, 1)
    cold = m.prefill_flops(AGENT_CONTEXT + AGENT_TURN) / (TP * per_gpu)
    warm = m.prefill_flops(AGENT_CONTEXT + AGENT_TURN, cached=AGENT_CONTEXT) / (TP * per_gpu)
    f["design_agent_cold_ms"] = _ms(cold, 0)
    f["design_agent_warm_ms"] = _ms(warm)
    f["design_agent_cold_vs_warm"] = _x(cold / warm)
    pool = VLLM_GPU_MEMORY_UTILIZATION * TP * H100_SXM.hbm_bytes - m.dense_params()
    sessions = math.floor(pool / cache)
    f["design_agent_sessions_hbm"] = f"{sessions}"
    f["design_agent_sessions_dram"] = f"{math.floor(ASSUMED_NODE_DRAM_BYTES / cache)}"
    f["design_agent_reload_ms"] = _ms(cache_load_seconds(m, full, PCIE5_X16_ONE_WAY, shards=TP))
    # Decode with every resident session generating at once, each cache near its full length.
    read = decode_weight_bytes(m, 8)
    step = (read + sessions * cache) / (TP * H100_SXM.hbm_bytes_per_s) / ASSUMED_EFFICIENCY
    f["design_agent_step_ms"] = _ms(step)
    f["design_agent_cache_share"] = f"{sessions * cache / (read + sessions * cache):.0%}"
    fp8_step = (read + sessions * cache / 2) / (TP * H100_SXM.hbm_bytes_per_s) / ASSUMED_EFFICIENCY
    f["design_agent_step_ms_fp8_cache"] = _ms(fp8_step)
    return f
