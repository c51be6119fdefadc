"""Numeric kinds drawn from the 2026 figures: low-precision weight bytes and EAGLE-style
acceptance along a draft chain.

The formulas are the figures' own (app/content/figures_2026.py), so a question and the card it
is asked on agree: weights are the multiplied parameters (no input embedding table), and a
4-bit block format pays for its shared scales.
"""

from __future__ import annotations

import random

from app.content.figures import LATER_MODELS, LLAMA3_8B
from app.content.figures_2026 import MXFP4_BITS, NVFP4_BITS, decode_weight_bytes, expected_accepted
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
