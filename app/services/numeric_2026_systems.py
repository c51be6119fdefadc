"""Numeric kinds drawn from the 2026 systems figures: a LoRA adapter's bytes, and the smallest
ring-attention block that hides the K/V transfer.

The formulas are the figures' own (app/content/figures_2026_systems.py), so a question and the card
it is asked on agree: an adapted d_in x d_out matrix adds r (d_in + d_out) parameters, and a ring
block must hold at least (n_kv / n_q) F / B tokens, with B one direction of the link.
"""

from __future__ import annotations

import random

from app.content.figures_2026_systems import (
    ALL_LINEAR,
    IB_BYTES_PER_S,
    NVLINK4_PER_DIRECTION,
    lora_params,
    ring_min_block,
)
from app.content.hardware import H100_SXM
from app.content.shapes import LATER_MODELS, LLAMA3_8B, ModelShape
from app.services.numeric_question import (
    NumericQuestion,
    _bytes,
    config_json,
    count_question,
    memory_question,
)

_LORA_MODELS: dict[str, ModelShape] = {
    "llama3_8b": LLAMA3_8B,
    "llama31_70b": LATER_MODELS["llama31_70b"],
    "qwen25_7b": LATER_MODELS["qwen25_7b"],
}
# what the adapter targets -> the projections it adapts
_TARGETS: dict[str, tuple[str, ...]] = {
    "q and v only": ("q", "v"),
    "all four attention projections (q, k, v, o)": ("q", "k", "v", "o"),
    "every linear layer (q, k, v, o, gate, up, down)": ALL_LINEAR,
}


def _widths(model: ModelShape) -> dict[str, tuple[int, int]]:
    d, ff = model.hidden, model.intermediate
    q, kv = model.q_heads * model.head_dim, model.kv_heads * model.head_dim
    return {
        "q": (d, q),
        "k": (d, kv),
        "v": (d, kv),
        "o": (q, d),
        "gate": (d, ff),
        "up": (d, ff),
        "down": (ff, d),
    }


def lora_adapter_bytes(rng: random.Random) -> NumericQuestion:
    model = _LORA_MODELS[rng.choice(list(_LORA_MODELS))]
    rank = rng.choice([8, 16, 32, 64])
    target = rng.choice(list(_TARGETS))
    modules = _TARGETS[target]
    params = lora_params(model, rank, modules)
    answer = params * 2
    widths = _widths(model)
    terms = " + ".join(f"{name} ({widths[name][0]:,} + {widths[name][1]:,})" for name in modules)
    per_layer = sum(widths[name][0] + widths[name][1] for name in modules)
    return memory_question(
        generator="lora_adapter_bytes",
        prompt=(
            f"A **rank-{rank}** LoRA adapter for **{model.name}** adapts **{target}** in every "
            f"layer; the MLP width is {model.intermediate:,}. Each adapted matrix W (d_in x d_out) "
            "gains A (d_in x r) and B (r x d_out), stored in BF16. How many bytes does the adapter "
            "take? Answer in MB."
        ),
        answer=answer,
        unit="MB",
        units=("MB", "MiB", "GB", "GiB"),
        solution=[
            f"Per layer, r x (d_in + d_out) summed over the adapted matrices: {rank} x [{terms}] "
            f"= {rank} x {per_layer:,} = {rank * per_layer:,} parameters.",
            f"Times {model.layers} layers = {params:,} parameters; x 2 bytes = {answer:,} bytes "
            f"= **{_bytes(answer, 'MB')}**.",
        ],
        config=config_json(model) | {"intermediate_size": model.intermediate},
    )


# name -> (bytes per second one way, how the link is described)
_LINKS = {
    "NVLink 4 (900 GB/s per GPU, both directions together)": NVLINK4_PER_DIRECTION,
    "one 400 Gb/s InfiniBand NIC per GPU (50 GB/s each way)": IB_BYTES_PER_S,
}
# name -> (query heads, KV heads); head size cancels out of the bound
_RING_MODELS = {
    "Llama-3.1-405B (128 query heads, 8 KV heads)": (128, 8),
    "Llama-3.1-70B (64 query heads, 8 KV heads)": (64, 8),
    "Qwen2.5-7B (28 query heads, 4 KV heads)": (28, 4),
    "a multi-head model (every query head has its own K/V head)": (1, 1),
}


def ring_block_size(rng: random.Random) -> NumericQuestion:
    model = rng.choice(list(_RING_MODELS))
    q_heads, kv_heads = _RING_MODELS[model]
    link = rng.choice(list(_LINKS))
    bandwidth = _LINKS[link]
    answer = ring_min_block(H100_SXM.bf16_flops, bandwidth, q_heads, kv_heads)
    ratio = "" if q_heads == kv_heads else f" x {kv_heads}/{q_heads}"
    return count_question(
        generator="ring_block_size",
        prompt=(
            f"Ring attention runs **{model}** across H100s (989 dense BF16 TFLOPS) linked by "
            f"**{link}**. Each step a device attends its c local queries to one K/V block of c "
            "tokens while sending that block on (BF16, projections and MLP ignored, no causal "
            "skipping). What is the smallest c, in tokens, for which the attention compute of a "
            "step hides the K/V transfer?"
        ),
        answer=answer,
        unit="tokens",
        answer_text=f"{answer:,.0f} tokens",
        tolerance=0.02,
        solution=[
            "Per layer: compute 4 c^2 x (query heads x head size) FLOPs; transfer K and V, "
            "2 c x (KV heads x head size) elements of 2 bytes.",
            "Hiding needs 4 c^2 n_q hd / F >= 4 c n_kv hd / B, so c >= (n_kv / n_q) x F / B.",
            f"c >= 989e12 / {bandwidth / 1e9:.0f}e9{ratio} = **{answer:,.0f} tokens**.",
        ],
    )
