"""Serving figures: latency metrics and cost, chunked prefill and prefill/decode disaggregation.

Merged into app.content.figures.compute_figures(); a name defined twice is an error. Names carry
their topic's prefix: serving_ (metrics and cost) and chunked_ (chunked prefill, disaggregation).

Every time here is a lower bound from the roofline (peak FLOP/s, peak HBM bandwidth, the link's
line rate); real systems land above it. Prices are an assumption stated on the cards, not a quote.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.content import inference_math as im
from app.content.hardware import H100_SXM
from app.content.shapes import DEEPSEEK_V3, GIB, LLAMA31_70B, QWEN25_7B, ModelShape

# An assumed rental price for one H100 SXM, in dollars per GPU-hour. Not a quote: cards say so
# and scale their answers with it (cost is proportional to price).
ASSUMED_H100_DOLLARS_PER_HOUR = 2.00

# One 400 Gb/s NDR InfiniBand port (NVIDIA ConnectX-7 data sheet), in bytes per second.
IB_NDR_400_BYTES_PER_S = 400e9 / 8


def qwen25_7b_params() -> int:
    """Qwen2.5-7B's parameters: the Llama-style count, whose qkv_bias flag already adds the
    biases of the q, k and v projections once per layer."""
    return QWEN25_7B.llama_params()


def qwen25_7b_read_bytes(bytes_per_param: float = 2) -> float:
    """Weight bytes a Qwen2.5-7B decode step reads (not the untied input embedding table)."""
    return QWEN25_7B.decode_read_bytes(bytes_per_param)


def end_to_end_latency(ttft_s: float, tpot_s: float, output_tokens: int) -> float:
    """The prefill emits the first token at TTFT; each of the other N - 1 tokens costs one TPOT."""
    return ttft_s + (output_tokens - 1) * tpot_s


def chance_of_a_tail_event(per_event: float, events: int) -> float:
    """Probability that at least one of `events` independent events lands in a tail of mass `per_event`."""
    return 1 - (1 - per_event) ** events


def slo_attainment(requests: Sequence[tuple[float, float]], ttft_slo_s: float, tpot_slo_s: float) -> float:
    """Share of (ttft, tpot) requests that meet BOTH SLOs (DistServe's attainment)."""
    met = sum(1 for ttft, tpot in requests if ttft <= ttft_slo_s and tpot <= tpot_slo_s)
    return met / len(requests)


def goodput(attainment_by_rate: dict[float, float], target: float) -> float:
    """Highest offered rate whose measured SLO attainment still reaches `target` (0 if none)."""
    good = [rate for rate, attained in attainment_by_rate.items() if attained >= target]
    return max(good, default=0.0)


def prefill_flops(model: ModelShape, prompt: int) -> float:
    """The bank's one prefill convention (ModelShape.prefill_flops): every layer for every prompt
    token, causal attention (q.k and p.v over half the n x n scores), the LM head once."""
    return model.prefill_flops(prompt)


def decode_step_seconds(weight_bytes: float, kv_bytes_per_token: float, batch: int, context: int) -> float:
    """Bandwidth floor on one decode step: the weights once, plus every sequence's cache."""
    return im.min_time_per_token(weight_bytes, batch * context * kv_bytes_per_token, H100_SXM)


def decode_step_compute_seconds(model: ModelShape, batch: int, context: int) -> float:
    """A decode step's compute floor: 2 FLOPs per multiplied parameter (layers and LM head, not
    the embedding lookup) per sequence, plus attention's q.k and p.v over the context."""
    attention = 4 * model.layers * model.q_heads * model.head_dim * context
    return im.compute_time(batch * (im.matmul_flops(model.matmul_params(), 1) + attention), H100_SXM)


def roofline_decode_step(model: ModelShape, batch: int, context: int, bytes_per_param: float = 2) -> float:
    """A decode step's lower bound: the larger of its memory time (the weights it reads once,
    every sequence's cache) and its compute time."""
    memory = im.min_time_per_token(
        model.decode_read_bytes(bytes_per_param), batch * context * model.kv_bytes(1), H100_SXM
    )
    return max(memory, decode_step_compute_seconds(model, batch, context))


def decode_capacity(model: ModelShape, context: int, tpot_slo_s: float) -> tuple[int, int]:
    """(sequences whose cache fits beside the bf16 weights on one 80 GB H100, the largest batch
    whose bandwidth-bound step still meets the TPOT SLO), every sequence at `context` tokens."""
    weights = model.dense_params() * 2  # the footprint: the embedding table sits in HBM too
    per_sequence = context * model.kv_bytes(1)
    fit = im.sequences_that_fit(H100_SXM.hbm_bytes - weights, per_sequence)
    by_slo = math.floor((tpot_slo_s * H100_SXM.hbm_bytes_per_s - model.decode_read_bytes()) / per_sequence)
    return fit, by_slo


def chunk_cache_reread_bytes(prompt: int, chunk: int, kv_bytes_per_token: float) -> float:
    """Cache bytes the chunks of one prompt read back: chunk i attends to the i * chunk tokens before it."""
    chunks = math.ceil(prompt / chunk)
    return sum(min(i * chunk, prompt) for i in range(chunks)) * kv_bytes_per_token


def _serving_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    ttft_s, tpot_s = 0.2, 0.025
    e2e = end_to_end_latency(ttft_s, tpot_s, 401)
    f["serving_example_ttft"] = f"{ttft_s * 1e3:.0f} ms"
    f["serving_example_tpot"] = f"{tpot_s * 1e3:.0f} ms"
    f["serving_e2e_example_s"] = f"{e2e:.2f} s"
    f["serving_e2e_naive_per_token_ms"] = f"{e2e / 401 * 1e3:.1f} ms"
    f["serving_user_tok_s_at_25ms"] = f"{1 / tpot_s:.0f} tokens/s"
    tail = 0.01  # the mass above P99
    f["serving_p99_tail"] = f"{tail:.0%}"
    f["serving_p99_below"] = f"{1 - tail:.0%}"
    for n in (100, 500):
        f[f"serving_p99_hit_{n}_tokens"] = f"{chance_of_a_tail_event(tail, n):.1%}"
    # A worked load test: (TTFT s, TPOT s) for ten requests against TTFT <= 1 s and TPOT <= 50 ms.
    requests = [
        (0.31, 0.031),
        (0.45, 0.036),
        (0.52, 0.044),
        (0.66, 0.049),
        (0.74, 0.038),
        (0.92, 0.047),
        (1.35, 0.041),
        (0.48, 0.058),
        (0.39, 0.062),
        (1.80, 0.071),
    ]
    ttft_slo_s, tpot_slo_s = 1.0, 0.050
    f["serving_goodput_ttft_slo"] = f"{ttft_slo_s:g} s"
    f["serving_goodput_tpot_slo"] = f"{tpot_slo_s * 1e3:.0f} ms"
    f["serving_attainment_example"] = f"{slo_attainment(requests, ttft_slo_s, tpot_slo_s):.0%}"
    f["serving_attainment_ttft_only"] = f"{slo_attainment(requests, 1.0, math.inf):.0%}"
    f["serving_attainment_tpot_only"] = f"{slo_attainment(requests, math.inf, 0.050):.0%}"
    sweep = {2.0: 0.99, 4.0: 0.97, 6.0: 0.92, 8.0: 0.78, 10.0: 0.51}
    for rate, attained in sweep.items():
        f[f"serving_sweep_{rate:g}_req_s_attainment"] = f"{attained:.0%}"
    f["serving_goodput_example"] = f"{goodput(sweep, 0.90):g} req/s"
    f["serving_goodput_per_gpu_colocated"] = f"{goodput(sweep, 0.90) / 2:g} req/s"
    # Cost floors for Qwen2.5-7B in bf16 on one H100 at the assumed price.
    params = qwen25_7b_params()
    weights = params * 2
    per_token_cache = QWEN25_7B.kv_bytes(1)
    price = ASSUMED_H100_DOLLARS_PER_HOUR
    f["serving_assumed_price"] = f"${price:.2f}"
    f["serving_qwen_params"] = f"{params / 1e9:.2f}B"
    f["serving_qwen_weights_gb"] = f"{weights / 1e9:.2f} GB"
    read = qwen25_7b_read_bytes()
    f["serving_qwen_read_gb"] = f"{read / 1e9:.2f} GB"
    b1 = im.max_tokens_per_second_batch1(read, H100_SXM)
    f["serving_qwen_b1_tok_s"] = f"{b1:.0f} tokens/s"
    f["serving_qwen_b1_cost"] = f"${im.cost_per_million_tokens(price, b1):.2f}"
    step = decode_step_seconds(read, per_token_cache, 64, 2048)
    b64 = 64 / step
    f["serving_qwen_b64_step_ms"] = f"{step * 1e3:.2f} ms"
    f["serving_qwen_b64_tok_s"] = f"{b64:,.0f} tokens/s"
    f["serving_qwen_b64_cost"] = f"${im.cost_per_million_tokens(price, b64):.3f}"
    f["serving_qwen_b64_cache_gb"] = f"{64 * 2048 * per_token_cache / 1e9:.2f} GB"
    f["serving_b1_over_b64_cost"] = f"{b64 / b1:.0f}x"
    cache_read = 64 * 2048 * per_token_cache
    f["serving_qwen_b64_cache_share"] = f"{cache_read / (read + cache_read):.0%}"
    # Capacity under a TPOT SLO (Little's law): 2,048-token sequences, 400 decode steps each.
    for slo_ms in (25, 15):
        fit, by_slo = decode_capacity(QWEN25_7B, 2048, slo_ms / 1e3)
        batch = min(fit, by_slo)
        step = roofline_decode_step(QWEN25_7B, batch, 2048)
        key = f"serving_cap_slo{slo_ms}"
        f[f"{key}_fit"] = str(fit)
        f[f"{key}_by_slo"] = str(by_slo)
        f[f"{key}_batch"] = str(batch)
        f[f"{key}_step_ms"] = f"{step * 1e3:.1f} ms"
        f[f"{key}_slo"] = f"{slo_ms} ms"
        f[f"{key}_tok_s"] = f"{batch / step:,.0f} tokens/s"
        f[f"{key}_req_s"] = f"{batch / (400 * step):.1f} req/s"
        f[f"{key}_decode_s"] = f"{400 * step:.1f} s"
        compute = decode_step_compute_seconds(QWEN25_7B, batch, 2048)
        f[f"{key}_compute_ms"] = f"{compute * 1e3:.1f} ms"
    # A long prompt's tokens pass through the layers; the LM head's one position is negligible.
    prefill_tok_s = H100_SXM.bf16_flops / im.matmul_flops(QWEN25_7B.layer_params(), 1)
    f["serving_qwen_prefill_tok_s"] = f"{prefill_tok_s:,.0f} tokens/s"
    f["serving_qwen_prefill_cost"] = f"${im.cost_per_million_tokens(price, prefill_tok_s):.4f}"
    return f


def _chunked_figures() -> dict[str, str]:
    f: dict[str, str] = {}
    m = QWEN25_7B
    read = qwen25_7b_read_bytes()
    per_token_cache = m.kv_bytes(1)
    whole = prefill_flops(m, 8192)
    f["chunked_qwen_prefill_8k_tflop"] = f"{whole / 1e12:.1f} TFLOP"
    attention = im.prefill_attention_flops(m.layers, m.q_heads, m.head_dim, 8192)
    f["chunked_qwen_attention_share_8k"] = f"{attention / whole:.1%}"
    f["chunked_qwen_prefill_8k_ms"] = f"{im.compute_time(whole, H100_SXM) * 1e3:.0f} ms"
    step = decode_step_seconds(read, per_token_cache, 32, 2048)
    f["chunked_qwen_b32_step_ms"] = f"{step * 1e3:.2f} ms"
    f["chunked_qwen_stall_steps"] = f"{im.compute_time(whole, H100_SXM) / step:.0f}"
    budget, decodes = 512, 32
    chunk = budget - decodes
    f["chunked_chunk_tokens"] = str(chunk)
    f["chunked_chunks_8k"] = str(im.ceil_div(8192, chunk))
    # Every token of the budget passes through the layers; the LM head runs for the decodes only
    # (a middle chunk of a prompt samples nothing).
    budget_flops = im.matmul_flops(m.layer_params(), budget) + im.matmul_flops(m.vocab * m.hidden, decodes)
    f["chunked_budget_compute_ms"] = f"{im.compute_time(budget_flops, H100_SXM) * 1e3:.1f} ms"
    f["chunked_h100_min_chunk"] = f"{im.crossover_batch(H100_SXM, 2):.0f}"
    reread = chunk_cache_reread_bytes(8192, chunk, per_token_cache)
    f["chunked_reread_gb_8k"] = f"{reread / 1e9:.2f} GB"
    f["chunked_reread_ms_8k"] = f"{reread / H100_SXM.hbm_bytes_per_s * 1e3:.2f} ms"
    # Moving a prompt's cache from a prefill GPU to a decode GPU over one 400 Gb/s port.
    f["chunked_ib_gb_s"] = f"{IB_NDR_400_BYTES_PER_S / 1e9:g} GB/s"
    big = LLAMA31_70B
    cache = big.kv_bytes(4096)
    f["chunked_70b_cache_4k_gb"] = f"{cache / 1e9:.2f} GB"
    f["chunked_70b_cache_4k_gib"] = f"{cache / GIB:.2f} GiB"
    one_link = cache / IB_NDR_400_BYTES_PER_S
    f["chunked_70b_transfer_1link_ms"] = f"{one_link * 1e3:.1f} ms"
    f["chunked_70b_transfer_8links_ms"] = f"{one_link / 8 * 1e3:.1f} ms"
    prefill = im.compute_time(prefill_flops(big, 4096), H100_SXM) / 8
    f["chunked_70b_prefill_4k_tp8_ms"] = f"{prefill * 1e3:.1f} ms"
    f["chunked_70b_transfer_share_8links"] = f"{one_link / 8 / prefill:.1%}"
    f["chunked_70b_transfer_share_1link"] = f"{one_link / prefill:.0%}"
    qwen_cache = m.kv_bytes(4096)
    f["chunked_qwen_cache_4k_mb"] = f"{qwen_cache / 1e6:.0f} MB"
    f["chunked_qwen_transfer_ms"] = f"{qwen_cache / IB_NDR_400_BYTES_PER_S * 1e3:.1f} ms"
    v3 = DEEPSEEK_V3
    v3_cache = im.mla_bytes_per_token(v3.layers, v3.kv_lora_rank, v3.qk_rope_head_dim, 2) * 4096
    f["chunked_v3_cache_4k_mb"] = f"{v3_cache / 1e6:.0f} MB"
    f["chunked_v3_transfer_ms"] = f"{v3_cache / IB_NDR_400_BYTES_PER_S * 1e3:.1f} ms"
    return f


def figures() -> dict[str, str]:
    """name -> the exact text a card must print for that figure."""
    f = _serving_figures()
    f.update(_chunked_figures())
    return f
