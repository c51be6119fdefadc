"""Numeric kinds drawn from the 2026 figures: low-precision weight bytes and EAGLE-style
acceptance along a draft chain.

The formulas are the figures' own (app/content/figures_2026.py), so a question and the card it
is asked on agree: weights are the multiplied parameters (no input embedding table), and a
4-bit block format pays for its shared scales.
"""

from __future__ import annotations

import random

from app.content.figures_2026 import MXFP4_BITS, NVFP4_BITS, decode_weight_bytes, expected_accepted
from app.content.shapes import LATER_MODELS, LLAMA3_8B
from app.services.numeric_question import (
    NumericQuestion,
    _bytes,
    config_json,
    count_question,
    memory_question,
)

_MODELS = {
    "llama3_8b": LLAMA3_8B,
    "llama31_70b": LATER_MODELS["llama31_70b"],
    "qwen25_7b": LATER_MODELS["qwen25_7b"],
}

# name -> (bits per weight, how the format is described)
_FORMATS = {
    "FP8 E4M3 (one scale per tensor)": (8.0, "8 bits per weight; one scale per tensor is negligible"),
    "MXFP4 (32 E2M1 values share one E8M0 scale)": (MXFP4_BITS, "4 + 8 / 32 = 4.25 bits per weight"),
    "NVFP4 (16 E2M1 values share one E4M3 scale)": (NVFP4_BITS, "4 + 8 / 16 = 4.5 bits per weight"),
}


def low_precision_weight_bytes(rng: random.Random) -> NumericQuestion:
    key = rng.choice(list(_MODELS))
    model = _MODELS[key]
    fmt = rng.choice(list(_FORMATS))
    bits, why = _FORMATS[fmt]
    params = model.matmul_params()
    answer = decode_weight_bytes(model, bits)
    return memory_question(
        generator="low_precision_weight_bytes",
        prompt=(
            f"**{model.name}** is quantized to **{fmt}**. How many bytes of weights does one decode "
            "step read? Count every multiplied weight (the layers and the LM head) but not the input "
            "embedding table, which a step only gathers one row of. Answer in GB."
        ),
        answer=answer,
        unit="GB",
        solution=[
            f"Multiplied parameters: {params:,} (all parameters minus the {model.vocab:,} x "
            f"{model.hidden:,} input embedding table).",
            f"Bits per weight: {why}.",
            f"{params:,} x {bits:g} / 8 = {answer:,.0f} bytes = **{_bytes(answer, 'GB')}**.",
        ],
        config=config_json(model),
    )


def eagle_acceptance(rng: random.Random) -> NumericQuestion:
    depth = rng.choice([3, 4, 5])
    first = rng.choice([0.7, 0.75, 0.8, 0.85, 0.9])
    drop = rng.choice([0.05, 0.1])
    rates = tuple(round(max(first - i * drop, 0.1), 2) for i in range(depth))
    answer = expected_accepted(rates)
    listed = ", ".join(f"{a:.2f}" for a in rates)
    terms, run = ["1"], 1.0
    for a in rates:
        run *= a
        terms.append(f"{run:.4f}")
    return count_question(
        generator="eagle_acceptance",
        prompt=(
            f"An EAGLE-style drafter proposes a chain of **{depth}** tokens. Given that the tokens "
            f"before it were accepted, drafted token i is accepted with probability **{listed}** "
            "(i = 1, 2, ...). How many tokens does one target verification pass yield on average, "
            "counting the target's own token at the first rejection (or the bonus token after a full "
            "accept)?"
        ),
        answer=answer,
        unit="tokens",
        answer_text=f"{answer:.3f} tokens",
        abs_tolerance=0.005,
        solution=[
            "A drafted token counts only if every token before it was accepted, so the terms are "
            "running products: 1 + a1 + a1 a2 + ...",
            " + ".join(terms) + f" = **{answer:.3f}**.",
        ],
    )


# DeepSeek-V3 config.json: hidden 7168, 8 routed experts per token, 58 MoE layers (the first 3
# of 61 are dense). Dispatch in FP8 (1 byte per element), combine in BF16 (2 bytes).
_V3_HIDDEN, _V3_TOP_K, _V3_MOE_LAYERS = 7168, 8, 58


def all_to_all_bytes(rng: random.Random) -> NumericQuestion:
    tokens = rng.choice([1, 64, 128, 256, 512])
    layers = rng.choice([1, _V3_MOE_LAYERS])
    dispatch_bytes = rng.choice([1, 2])
    per_copy = _V3_HIDDEN * (dispatch_bytes + 2)
    answer = tokens * layers * _V3_TOP_K * per_copy
    scope = "one MoE layer" if layers == 1 else f"all {layers} MoE layers"
    dispatch_name = "FP8 (1 byte per element)" if dispatch_bytes == 1 else "BF16 (2 bytes per element)"
    return memory_question(
        generator="all_to_all_bytes",
        prompt=(
            f"DeepSeek-V3 (hidden size {_V3_HIDDEN:,}, {_V3_TOP_K} routed experts per token) is served "
            f"with wide expert parallelism, every routed expert on a different GPU than the token. "
            f"Dispatch sends each token's hidden vector to each of its experts in **{dispatch_name}**; "
            "combine sends each expert's output back in **BF16**. How many bytes cross the "
            f"all-to-all for **{tokens}** token{'s' if tokens > 1 else ''} over **{scope}** "
            "(payload only, no scales or metadata)? Answer in MB."
        ),
        answer=answer,
        unit="MB",
        units=("MB", "MiB", "GB", "GiB", "KB", "KiB"),
        solution=[
            f"Per token and layer: {_V3_TOP_K} copies out x {_V3_HIDDEN:,} x {dispatch_bytes} bytes + "
            f"{_V3_TOP_K} copies back x {_V3_HIDDEN:,} x 2 bytes = {_V3_TOP_K * per_copy:,} bytes.",
            f"Times {tokens} token(s) x {layers} layer(s) = {answer:,} bytes = **{_bytes(answer, 'MB')}**.",
        ],
    )


def hybrid_state_vs_kv(rng: random.Random) -> NumericQuestion:
    from app.content.figures_2026 import JAMBA, QWEN3_NEXT

    model = rng.choice([JAMBA, QWEN3_NEXT])
    tokens = rng.choice([2048, 4096, 8192, 16384])  # short enough that the state is not a rounding error
    state = model.state_bytes()
    per_token = model.kv_bytes_per_token()
    answer = state + per_token * tokens
    return memory_question(
        generator="hybrid_state_vs_kv",
        prompt=(
            f"**{model.name}** has {model.attention_layers} attention layers ({model.kv_heads} KV heads "
            f"of {model.head_dim}) and {model.recurrent_layers} recurrent layers, each keeping a "
            f"{model.state_elements:,}-element state plus a convolution buffer of "
            f"{model.conv_channels:,} channels x {model.conv_kernel - 1} past inputs. Everything is "
            f"BF16. How much memory does one sequence of **{tokens:,} tokens** hold (KV cache plus "
            "recurrent state)? Answer in GiB."
        ),
        answer=answer,
        solution=[
            f"KV per token: 2 x {model.attention_layers} x {model.kv_heads} x {model.head_dim} x 2 bytes "
            f"= {per_token:,} bytes; times {tokens:,} = {per_token * tokens:,} bytes.",
            f"State: {model.recurrent_layers} x ({model.state_elements:,} + {model.conv_channels:,} x "
            f"{model.conv_kernel - 1}) x 2 bytes = {state:,} bytes, whatever the length.",
            f"Total {answer:,} bytes = **{_bytes(answer, 'GiB')}**.",
        ],
    )
