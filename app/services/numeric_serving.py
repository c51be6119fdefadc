"""Numeric questions about the hardware and the serving loop, drawn from the bank's figures.

Eight kinds, each from a real GPU data sheet (app/content/hardware.py) or a real model config
(app/content/shapes.py), computed with the formulas the cards use (app/content/inference_math.py):

- min_decode_latency: the bandwidth bound on time per output token at batch 1 (seconds).
- ridge_point: a GPU's peak FLOP/s over its HBM bandwidth (FLOP/byte).
- crossover_batch: the decode batch at which weight matmuls stop being memory-bound (sequences).
- quantized_kv_cache: a cache stored in int8 or int4 with one fp16 scale per group (bytes).
- mla_kv_cache: DeepSeek-V3's latent cache against a GQA model's (bytes).
- tp_cache_per_gpu: the KV cache each GPU holds under tensor parallelism (bytes).
- speculative_tokens: expected tokens per target pass (Leviathan et al., 2023, eq. 1).
- cost_per_million_tokens: dollars per million output tokens for a stated price and throughput.
"""

from __future__ import annotations

import random

from app.content import inference_math as im
from app.content.figures_hardware import BATCH1_MODELS
from app.content.hardware import GPU, GPUS
from app.content.shapes import DEEPSEEK_V3, LATER_MODELS, LLAMA2_7B, LLAMA2_70B, LLAMA3_8B, ModelShape
from app.services.numeric_question import (
    NumericQuestion,
    _bytes,
    config_json,
    count_question,
    memory_question,
)

WEIGHT_DTYPES = {"bf16": 2.0, "int8": 1.0, "int4": 0.5}


def _embedding_note(untouched: int) -> str:
    """What a decode step leaves unread, said in the prompt so the problem can be solved from it."""
    if untouched <= 0:
        return ""  # tied: the table is read once, as the LM head
    return f", of which {untouched:,} are the input embedding table, gathered one row per token"


def _gpu(rng: random.Random) -> GPU:
    return GPUS[rng.choice(list(GPUS))]


def _gpu_line(gpu: GPU) -> str:
    return (
        f"{gpu.name}: {gpu.bf16_flops / 1e12:,.0f} TFLOP/s dense BF16, "
        f"{gpu.hbm_bytes_per_s / 1e9:,.0f} GB/s of HBM bandwidth"
    )


def _rates(gpu: GPU) -> str:
    return (
        f"({gpu.bf16_flops / 1e12:,.0f} x 10^12 FLOP/s) / ({gpu.hbm_bytes_per_s / 1e9:,.0f} x 10^9 bytes/s)"
    )


def _bytes_word(bpp: float) -> str:
    return f"{bpp:g} byte" if bpp == 1 else f"{bpp:g} bytes"


def _seconds(value: float) -> str:
    """A time in the unit a person would say it in, 3 significant digits (inside a 2% tolerance)."""
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} us"


def _time_unit(value: float) -> str:
    return "s" if value >= 1 else "ms" if value >= 1e-3 else "us"


def min_decode_latency(rng: random.Random) -> NumericQuestion:
    key = rng.choice(list(BATCH1_MODELS))
    model = BATCH1_MODELS[key]
    gpu = _gpu(rng)
    dtype = rng.choice(list(WEIGHT_DTYPES))
    bpp = WEIGHT_DTYPES[dtype]
    params = model.dense_params()
    read = model.matmul_params()  # not the input embedding table: a step gathers one row of it
    weights = read * bpp
    answer = im.min_time_per_token(weights, 0, gpu)
    unit = _time_unit(answer)
    return NumericQuestion(
        generator="min_decode_latency",
        prompt=(
            f"**{model.name}** ({params:,} parameters{_embedding_note(params - read)}) decodes at "
            "**batch 1** with a short context on one "
            f"**{_gpu_line(gpu)}**. Its weights are stored in **{dtype}** ({bpp:g} byte"
            f"{'' if bpp == 1 else 's'} per parameter). Ignoring the KV cache and kernel overheads, what is "
            "the lower bound on the time per output token?"
        ),
        answer=answer,
        dimension="time",
        unit=unit,
        units=["ms", "us", "s"],
        tolerance=0.02,
        solution=[
            "At batch 1 a decode step does about 2 FLOPs per parameter but must read every weight once "
            "from HBM, so it is bound by bandwidth, not by FLOPs.",
            f"Bytes per step: every matrix the step multiplies by, {read:,} of the {params:,} parameters "
            "(the input embedding table is only gathered one row at a time; a tied table is read once, "
            f"as the LM head): {read:,} x {bpp:g} = {weights:,.0f} bytes ({weights / 1e9:.2f} GB).",
            f"Time: {weights / 1e9:.2f} GB / {gpu.hbm_bytes_per_s / 1e9:,.0f} GB/s = **{_seconds(answer)}** "
            f"per token, at most {1 / answer:,.0f} tokens/s for one user.",
            f"The FLOPs take far less: {2 * read:,} / ({gpu.bf16_flops / 1e12:,.0f} x 10^12 FLOP/s) = "
            f"{_seconds(2 * read / gpu.bf16_flops)}.",
        ],
        answer_text=_seconds(answer),
        config=config_json(model),
    )


def ridge_point(rng: random.Random) -> NumericQuestion:
    gpu = _gpu(rng)
    answer = gpu.ridge_flops_per_byte
    return NumericQuestion(
        generator="ridge_point",
        prompt=(
            f"The data sheet of the **{gpu.name}** gives **{gpu.bf16_flops / 1e12:,.0f} TFLOP/s** of dense "
            "BF16 "
            f"tensor-core math and **{gpu.hbm_bytes_per_s / 1e9:,.0f} GB/s** of HBM bandwidth. At what "
            "arithmetic "
            "intensity (FLOPs per byte read from HBM) does a kernel stop being memory-bound on it?"
        ),
        answer=answer,
        dimension="intensity",
        unit="FLOP/byte",
        units=["FLOP/byte"],
        tolerance=0.01,
        solution=[
            "The roofline's ridge point is where compute time equals memory time: peak FLOP/s divided by "
            "peak bytes/s.",
            f"{_rates(gpu)} = **{answer:.1f} FLOP/byte**.",
            "Below it a kernel waits on memory (decode at small batch does about 1 FLOP/byte in bf16); "
            "above it the math units are the limit (a long prefill).",
        ],
        answer_text=f"{answer:.1f} FLOP/byte",
    )


def crossover_batch(rng: random.Random) -> NumericQuestion:
    gpu = _gpu(rng)
    dtype = rng.choice(list(WEIGHT_DTYPES))
    bpp = WEIGHT_DTYPES[dtype]
    answer = im.crossover_batch(gpu, bpp)
    return count_question(
        generator="crossover_batch",
        prompt=(
            f"A dense model's weights are stored in **{dtype}** ({bpp:g} byte{'' if bpp == 1 else 's'} per "
            f"parameter) and it decodes on one **{_gpu_line(gpu)}**. Counting only the weight matmuls "
            "(2 FLOPs per parameter per sequence; ignore the KV cache), at about what batch size does a "
            "decode "
            "step stop being memory-bound?"
        ),
        answer=answer,
        unit="sequences",
        tolerance=0.02,
        abs_tolerance=1.0,
        solution=[
            f"Ridge point: {_rates(gpu)} = {gpu.ridge_flops_per_byte:.1f} FLOP/byte.",
            f"A step over b sequences reads each weight once ({_bytes_word(bpp)}) and does 2b FLOPs with it: "
            f"intensity = 2b / {bpp:g} FLOP/byte.",
            f"Set 2b / {bpp:g} = {gpu.ridge_flops_per_byte:.1f}: b = {gpu.ridge_flops_per_byte:.1f} x "
            f"{bpp:g} / 2 = "
            f"**{answer:.0f} sequences**.",
            "In practice the KV cache reads (never shared between sequences) push the real crossover higher.",
        ],
        answer_text=f"{answer:.0f} sequences",
    )


_QUANT_MODELS: dict[str, ModelShape] = {
    "llama2_7b": LLAMA2_7B,
    "llama3_8b": LLAMA3_8B,
    "llama2_70b": LLAMA2_70B,
    **{k: LATER_MODELS[k] for k in ("qwen25_7b", "mixtral_8x7b", "llama31_70b")},
}


def _shape_line(model: ModelShape) -> str:
    return f"{model.layers} layers, {model.kv_heads} key-value heads, head_dim {model.head_dim}"


def quantized_kv_cache(rng: random.Random) -> NumericQuestion:
    key = rng.choice(list(_QUANT_MODELS))
    model = _QUANT_MODELS[key]
    bits = rng.choice([8, 4])
    group = rng.choice([32, 64, 128])
    tokens, batch = rng.choice([4096, 8192, 32768]), rng.choice([1, 8, 16, 32])
    per_token = im.quantized_kv_bytes_per_token(model.layers, model.kv_heads, model.head_dim, bits, group)
    answer = per_token * tokens * batch
    fp16 = model.kv_bytes(tokens, batch)
    elements = 2 * model.layers * model.kv_heads * model.head_dim
    return memory_question(
        generator="quantized_kv_cache",
        prompt=(
            f"**{model.name}** ({_shape_line(model)}) stores its KV cache in **int{bits}**, with one **fp16 "
            "scale "
            f"per group of {group} elements**. How much memory does the cache of **{batch}** sequence"
            f"{'s' if batch > 1 else ''} of **{tokens:,} tokens** take? Answer in GiB."
        ),
        answer=answer,
        solution=[
            f"Elements per token: 2 x {model.layers} x {model.kv_heads} x {model.head_dim} = {elements:,}.",
            f"Payload: {elements:,} x {bits} / 8 = {elements * bits // 8:,} bytes; scales: {elements:,} / "
            f"{group} x 2 "
            f"= {elements / group * 2:,.0f} bytes; {per_token:,.0f} bytes per token.",
            f"Times {tokens:,} tokens x {batch} = {answer:,.0f} bytes = **{_bytes(answer, 'GiB')}**.",
            f"The fp16 cache would be {_bytes(fp16, 'GiB')}: {fp16 / answer:.2f}x larger (not exactly "
            f"{16 // bits}x, because of the scales).",
        ],
        config=config_json(model),
    )


def mla_kv_cache(rng: random.Random) -> NumericQuestion:
    v3 = DEEPSEEK_V3
    tokens, batch = rng.choice([4096, 32768, 131072]), rng.choice([1, 4, 16])
    per_token = im.mla_bytes_per_token(v3.layers, v3.kv_lora_rank, v3.qk_rope_head_dim, 2)
    answer = per_token * tokens * batch
    key_width = v3.qk_nope_head_dim + v3.qk_rope_head_dim
    mha_per_token = v3.layers * v3.q_heads * (key_width + v3.v_head_dim) * 2
    return memory_question(
        generator="mla_kv_cache",
        prompt=(
            f"**{v3.name}** uses multi-head latent attention: per layer and token it caches one compressed "
            f"latent of **kv_lora_rank = {v3.kv_lora_rank}** numbers plus one shared RoPE key of "
            f"**qk_rope_head_dim = {v3.qk_rope_head_dim}**, over **{v3.layers} layers**, in **bf16**. How "
            "much "
            f"cache do **{batch}** sequence{'s' if batch > 1 else ''} of **{tokens:,} tokens** take? Answer "
            "in GiB."
        ),
        answer=answer,
        solution=[
            f"Per token and layer: {v3.kv_lora_rank} + {v3.qk_rope_head_dim} = "
            f"{v3.kv_lora_rank + v3.qk_rope_head_dim} numbers (no separate K and V, no per-head copies).",
            f"Per token: {v3.layers} x {v3.kv_lora_rank + v3.qk_rope_head_dim} x 2 bytes = {per_token:,} "
            "bytes.",
            f"Times {tokens:,} tokens x {batch} = {answer:,} bytes = **{_bytes(answer, 'GiB')}**.",
            f"Caching full keys ({key_width} wide) and values ({v3.v_head_dim} wide) for all {v3.q_heads} "
            "heads "
            f"would take {mha_per_token:,} bytes per token, {mha_per_token / per_token:.0f}x more.",
        ],
        config={
            "num_hidden_layers": v3.layers,
            "kv_lora_rank": v3.kv_lora_rank,
            "qk_rope_head_dim": v3.qk_rope_head_dim,
            "num_attention_heads": v3.q_heads,
        },
    )


_TP_MODELS: dict[str, ModelShape] = {
    "llama2_70b": LLAMA2_70B,
    **{k: LATER_MODELS[k] for k in ("llama31_70b", "llama31_405b", "qwen25_7b", "mixtral_8x7b")},
}


def tp_cache_per_gpu(rng: random.Random) -> NumericQuestion:
    key = rng.choice(list(_TP_MODELS))
    model = _TP_MODELS[key]
    tp = rng.choice([2, 4, 8, 16])
    tokens, batch = rng.choice([4096, 8192, 32768]), rng.choice([1, 8, 32])
    heads = im.kv_heads_per_gpu(model.kv_heads, tp)
    answer = 2 * model.layers * heads * model.head_dim * 2 * tokens * batch
    if tp <= model.kv_heads:
        split = f"{model.kv_heads} key-value heads / {tp} GPUs = {heads} per GPU."
    else:
        split = (
            f"{tp} GPUs but only {model.kv_heads} key-value heads: each head is replicated on "
            f"{tp // model.kv_heads} GPUs, so every GPU still holds 1 (the cache per GPU stops shrinking)."
        )
    return memory_question(
        generator="tp_cache_per_gpu",
        prompt=(
            f"**{model.name}** ({_shape_line(model)}) is served with **tensor parallelism over {tp} GPUs**, "
            "which split the attention heads between them. How much **bf16 KV cache does each GPU hold** "
            "for "
            f"**{batch}** sequence{'s' if batch > 1 else ''} of **{tokens:,} tokens**? Answer in GiB."
        ),
        answer=answer,
        solution=[
            "Tensor parallelism gives each GPU a slice of the heads, and each GPU caches the keys and values "
            "of its own key-value heads, for every layer.",
            split,
            f"Per GPU: 2 x {model.layers} x {heads} x {model.head_dim} x 2 bytes x {tokens:,} x {batch} = "
            f"{answer:,} bytes = **{_bytes(answer, 'GiB')}**.",
            f"The whole cache is {_bytes(model.kv_bytes(tokens, batch), 'GiB')}.",
        ],
        config=config_json(model),
    )


def speculative_tokens(rng: random.Random) -> NumericQuestion:
    alpha = rng.choice([0.5, 0.6, 0.7, 0.8, 0.9])
    gamma = rng.choice([2, 3, 4, 5, 7])
    answer = im.speculative_expected_tokens(alpha, gamma)
    return count_question(
        generator="speculative_tokens",
        prompt=(
            f"In speculative decoding a draft model proposes **gamma = {gamma}** tokens per round and the "
            "target "
            "model verifies them in one pass. Each draft token is accepted with probability **alpha = "
            f"{alpha}**, "
            "independently. How many tokens does one round produce on average (the accepted drafts plus the "
            "token the target adds)?"
        ),
        answer=answer,
        unit="tokens",
        tolerance=0.01,
        solution=[
            "The round yields k + 1 tokens when the first k drafts are accepted and the next is rejected "
            "(or all "
            "gamma are accepted and the target adds one more).",
            "Expected tokens = 1 + alpha + alpha^2 + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha) "
            "(Leviathan et al., 2023, eq. 1).",
            f"(1 - {alpha}^{gamma + 1}) / (1 - {alpha}) = **{answer:.2f} tokens** per target pass, at most "
            f"{gamma + 1}.",
        ],
        answer_text=f"{answer:.2f} tokens",
    )


def cost_per_million_tokens(rng: random.Random) -> NumericQuestion:
    """Dollars per million output tokens from a GPU's hourly price and a sustained decode throughput."""
    gpu = _gpu(rng)
    price = rng.choice([1.5, 2.0, 2.5, 3.0, 4.0])
    batch = rng.choice([8, 32, 64])
    weights = LLAMA3_8B.decode_read_bytes()
    cache = LLAMA3_8B.kv_bytes(4096)
    step = im.min_time_per_token(weights, batch * cache, gpu)
    throughput = round(batch / step * 0.6, -1)  # a stated, realistic 60% of the bandwidth bound
    answer = im.cost_per_million_tokens(price, throughput)
    return count_question(
        generator="cost_per_million_tokens",
        prompt=(
            f"Llama-3-8B runs on one **{gpu.name}** rented at **${price:.2f} per hour**, and the server "
            f"sustains **{throughput:,.0f} output tokens per second** across a batch of {batch} users, "
            "around "
            "the clock. What does a million output tokens cost, in dollars?"
        ),
        answer=answer,
        unit="dollars",
        tolerance=0.01,
        solution=[
            f"Tokens per hour: {throughput:,.0f} x 3,600 = {throughput * 3600:,.0f}.",
            f"Cost per token: ${price:.2f} / {throughput * 3600:,.0f}.",
            f"Per million tokens: ${price:.2f} / {throughput * 3600:,.0f} x 1,000,000 = **${answer:.3f}**.",
            "Utilisation matters as much as speed: at half the traffic the GPU costs the same per hour, "
            "so each token costs twice as much.",
        ],
        answer_text=f"{answer:.3f} dollars",
    )
