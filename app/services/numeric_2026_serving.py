"""Numeric kinds drawn from the tiered-KV figures: how long a cache takes to load over a link, and
how many times faster that is than recomputing it.

The formulas are the figures' own (app/content/figures_2026_serving.py): a cache is
`kv_bytes(tokens)`, split evenly over the tensor-parallel GPUs (each loads its KV heads over its own
link); a recompute is the bank's prefill convention (ModelShape.prefill_flops) at the GPUs' dense
BF16 peak. Both are floors, so the ratio is the one a card states.
"""

from __future__ import annotations

import random

from app.content.figures_2026_serving import NVLINK4_ONE_WAY, cache_load_seconds, recompute_seconds
from app.content.figures_kernels import PCIE5_X16_ONE_WAY
from app.content.figures_serving import IB_NDR_400_BYTES_PER_S
from app.content.hardware import H100_SXM
from app.content.shapes import LATER_MODELS, LLAMA2_7B, LLAMA3_8B, ModelShape
from app.services.numeric_question import NumericQuestion, config_json, count_question
from app.services.numeric_serving import _seconds, _time_unit

# name -> (model, tensor-parallel degrees it may run at: each must divide its KV heads)
_MODELS: dict[str, tuple[ModelShape, tuple[int, ...]]] = {
    "llama2_7b": (LLAMA2_7B, (1,)),
    "llama3_8b": (LLAMA3_8B, (1,)),
    "qwen25_7b": (LATER_MODELS["qwen25_7b"], (1,)),
    "llama31_70b": (LATER_MODELS["llama31_70b"], (4, 8)),
}
# where the cache comes from -> (link, bytes per second each way per GPU)
_LINKS: dict[str, tuple[str, float]] = {
    "host DRAM": ("PCIe Gen5 x16, 64 GB/s each way", PCIE5_X16_ONE_WAY),
    "another node's DRAM": ("one 400 Gb/s NIC per GPU (RDMA), 50 GB/s", IB_NDR_400_BYTES_PER_S),
    "a peer GPU's HBM": ("NVLink 4, 450 GB/s each way", NVLINK4_ONE_WAY),
}
_PREFIXES = (4096, 8192, 16384, 32768)


def _draw(rng: random.Random) -> tuple[ModelShape, int, int, str, str, float]:
    model, degrees = _MODELS[rng.choice(list(_MODELS))]
    tp = rng.choice(degrees)
    tokens = rng.choice(_PREFIXES)
    source = rng.choice(list(_LINKS))
    link, rate = _LINKS[source]
    return model, tp, tokens, source, link, rate


def _setting(model: ModelShape, tp: int, tokens: int, source: str, link: str) -> str:
    gpus = (
        "one H100"
        if tp == 1
        else f"**{tp} H100s** with tensor parallelism (each holds 1/{tp} of the KV heads)"
    )
    return (
        f"**{model.name}** (BF16 cache) runs on {gpus}. The KV cache of a **{tokens:,}-token** prefix "
        f"is in **{source}**, reached over **{link}** per GPU."
    )


def _cache_steps(model: ModelShape, tp: int, tokens: int, rate: float) -> list[str]:
    per_token = model.kv_bytes(1)
    cache = model.kv_bytes(tokens)
    shard = f" / {tp} GPUs, each over its own link" if tp > 1 else ""
    return [
        f"Cache per token: 2 x {model.layers} layers x {model.kv_heads} KV heads x {model.head_dim} "
        f"x 2 bytes = {per_token:,} bytes; times {tokens:,} = {cache:,} bytes ({cache / 1e9:.2f} GB).",
        f"Load: {cache / 1e9:.2f} GB{shard} / {rate / 1e9:g} GB/s "
        f"= **{_seconds(cache_load_seconds(model, tokens, rate, shards=tp))}**.",
    ]


def kv_load_time(rng: random.Random) -> NumericQuestion:
    model, tp, tokens, source, link, rate = _draw(rng)
    answer = cache_load_seconds(model, tokens, rate, shards=tp)
    return NumericQuestion(
        generator="kv_load_time",
        prompt=(
            _setting(model, tp, tokens, source, link)
            + " At the link's line rate, how long does bringing the cache back into HBM take?"
        ),
        answer=answer,
        dimension="time",
        unit=_time_unit(answer),
        units=["ms", "us", "s"],
        tolerance=0.02,
        solution=_cache_steps(model, tp, tokens, rate),
        answer_text=_seconds(answer),
        config=config_json(model),
    )


def kv_load_vs_recompute(rng: random.Random) -> NumericQuestion:
    model, tp, tokens, source, link, rate = _draw(rng)
    load = cache_load_seconds(model, tokens, rate, shards=tp)
    recompute = recompute_seconds(model, tokens, H100_SXM, gpus=tp)
    answer = recompute / load
    layer_params = model.layer_params()
    attention = 2 * model.layers * model.q_heads * model.head_dim * tokens**2
    head = 2 * model.vocab * model.hidden
    flops = model.prefill_flops(tokens)
    peak = tp * H100_SXM.bf16_flops
    ratio = f"{answer:.3g}" if answer < 1000 else f"{answer:,.0f}"  # 3 digits: inside the 2% tolerance
    return count_question(
        generator="kv_load_vs_recompute",
        prompt=(
            _setting(model, tp, tokens, source, link)
            + " Alternatively the prefix can be prefilled again at the GPUs' dense BF16 peak "
            f"({H100_SXM.bf16_flops / 1e12:,.0f} TFLOP/s each), counting 2 FLOPs per layer parameter "
            f"per token ({layer_params:,} layer parameters), causal attention "
            "(2 x layers x query heads x head_dim x T^2 FLOPs) and the LM head once "
            f"(vocab {model.vocab:,} x hidden {model.hidden:,}). How many times faster is loading the cache "
            "than recomputing it?"
        ),
        answer=answer,
        unit="x",
        answer_text=f"{ratio}x",
        tolerance=0.02,
        solution=[
            *_cache_steps(model, tp, tokens, rate),
            f"Recompute FLOPs: 2 x {layer_params:,} x {tokens:,} + {attention:,} (attention) + {head:,} "
            f"(LM head) = {flops:.4g} FLOPs; over {peak / 1e12:,.0f} TFLOP/s that is {_seconds(recompute)}.",
            f"Ratio: {_seconds(recompute)} / {_seconds(load)} = **{ratio}x**.",
        ],
        config=config_json(model),
    )
