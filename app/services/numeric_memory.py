"""Numeric questions about the KV cache, generated from real model configs (app/content/shapes.py).

Each generator draws a model, a length, a batch and a dtype, and returns the question, the
exact answer in a base unit (bytes, or a plain count), the units the answer may be given in,
the tolerance, and a worked solution. The unit is part of the check: 2.62 GB is not 2.62 GiB.
"""

from __future__ import annotations

import random

from app.content.figures import naive_vs_cached_work
from app.content.shapes import GPU_80GB_BYTES, MODELS, ModelShape
from app.services.numeric_question import (
    DTYPES,
    NumericQuestion,
    _bytes,
    config_json,
    count_question,
    memory_question,
)


def _dtype(rng: random.Random, model: ModelShape) -> tuple[str, int]:
    names = ["fp32", "fp16"] if model.name.startswith("GPT-2") else ["fp16", "bf16", "fp16", "fp8"]
    name = rng.choice(names)
    return name, DTYPES[name]


def _shape_steps(model: ModelShape) -> list[str]:
    return [
        f"From the config: {model.layers} layers, {model.q_heads} query heads, "
        f"{model.kv_heads} key-value heads, hidden size {model.hidden}.",
        f"head_dim = hidden / query heads = {model.hidden} / {model.q_heads} = {model.head_dim}.",
    ]


def _per_token(model: ModelShape, kv_heads: int, bpe: int) -> int:
    return 2 * model.layers * kv_heads * model.head_dim * bpe


def kv_bytes_per_token(rng: random.Random) -> NumericQuestion:
    model = MODELS[rng.choice(list(MODELS))]
    dtype, bpe = _dtype(rng, model)
    answer = _per_token(model, model.kv_heads, bpe)
    return memory_question(
        generator="kv_bytes_per_token",
        prompt=(
            f"How much KV cache does **one token** take in **{model.name}**, over all layers, "
            f"with the cache stored in **{dtype}** ({bpe} byte{'s' if bpe > 1 else ''} per number)?"
        ),
        answer=answer,
        unit="KiB",
        units=["bytes", "KiB", "MiB", "KB", "MB"],
        tolerance=0.005,
        solution=[
            *_shape_steps(model),
            "Per token the cache holds one key and one value vector per layer and per key-value head: "
            "`2 x layers x kv_heads x head_dim x bytes_per_element`.",
            f"2 x {model.layers} x {model.kv_heads} x {model.head_dim} x {bpe} = {answer:,} bytes "
            f"= {_bytes(answer, 'KiB')}.",
        ],
        config=config_json(model),
    )


def kv_cache_size(rng: random.Random) -> NumericQuestion:
    model = MODELS[rng.choice(list(MODELS))]
    dtype, bpe = _dtype(rng, model)
    lengths = [256, 512, 1024] if model.name.startswith("GPT-2") else [2048, 4096, 8000, 8192, 32768]
    seq_len, batch = rng.choice(lengths), rng.choice([1, 4, 8, 16, 32, 64])
    per_token = _per_token(model, model.kv_heads, bpe)
    answer = per_token * seq_len * batch
    return memory_question(
        generator="kv_cache_size",
        prompt=(
            f"**{model.name}** serves a batch of **{batch}** sequence{'s' if batch > 1 else ''}, each "
            f"**{seq_len:,} tokens** long, with the KV cache in **{dtype}**. How much memory does the "
            "whole cache take? Answer in GiB (or say which unit you use)."
        ),
        answer=answer,
        units=["GiB", "GB", "MiB", "MB", "TiB"],
        solution=[
            *_shape_steps(model),
            f"Per token: 2 x {model.layers} x {model.kv_heads} x {model.head_dim} x {bpe} "
            f"= {per_token:,} bytes.",
            f"Times {seq_len:,} tokens times {batch} sequence{'s' if batch > 1 else ''} = {answer:,} bytes.",
            f"In binary units: {answer:,} / 2^30 = {_bytes(answer, 'GiB')} "
            f"(in decimal units {_bytes(answer, 'GB')}).",
        ],
        config=config_json(model),
    )


def sequences_that_fit(rng: random.Random) -> NumericQuestion:
    key = rng.choice(["llama2_7b", "mistral_7b", "llama3_8b"])
    model = MODELS[key]
    seq_len = rng.choice([2048, 4096, 8192, 16384, 32768])
    params = model.llama_params()
    weights = params * 2
    per_seq = model.kv_bytes(seq_len)  # fp16
    free = GPU_80GB_BYTES - weights
    answer = free // per_seq
    return count_question(
        generator="sequences_that_fit",
        prompt=(
            f"**{model.name}** ({params:,} parameters) runs in **fp16** on one **80 GB** GPU "
            "(80 x 10^9 bytes). Ignoring activations and the runtime's own memory, how many full "
            f"**{seq_len:,}-token** sequences of fp16 KV cache fit beside the weights? "
            "Give a whole number of sequences."
        ),
        answer=answer,
        unit="sequences",
        solution=[
            *_shape_steps(model),
            f"Weights: {params:,} parameters x 2 bytes = {weights:,} bytes ({_bytes(weights, 'GiB')}).",
            f"Left for the cache: 80,000,000,000 - {weights:,} = {free:,} bytes.",
            f"Cache per sequence: 2 x {model.layers} x {model.kv_heads} x {model.head_dim} x 2 x "
            f"{seq_len:,} = {per_seq:,} bytes ({_bytes(per_seq, 'GiB')}).",
            f"{free:,} / {per_seq:,} = {free / per_seq:.2f}, so **{answer:,}** whole sequences fit.",
        ],
        config=config_json(model),
    )


def gqa_saving(rng: random.Random) -> NumericQuestion:
    key = rng.choice(["mistral_7b", "llama3_8b", "llama2_70b"])
    model = MODELS[key]
    seq_len, batch = rng.choice([4096, 8192, 32768]), rng.choice([1, 8, 16])
    group = model.q_heads // model.kv_heads
    mha = _per_token(model, model.q_heads, 2) * seq_len * batch
    gqa = _per_token(model, model.kv_heads, 2) * seq_len * batch
    steps = [
        *_shape_steps(model),
        f"With GQA the cache stores {model.kv_heads} key-value heads; with MHA it would store one per "
        f"query head, {model.q_heads}: {group} times as much.",
    ]
    if rng.random() < 0.5:
        return count_question(
            generator="gqa_saving",
            prompt=(
                f"**{model.name}** uses grouped-query attention. By what factor is its KV cache smaller "
                "than the cache of the same model with full multi-head attention?"
            ),
            answer=group,
            unit="x",
            solution=[
                *steps,
                f"The factor is query heads / key-value heads = {model.q_heads} / "
                f"{model.kv_heads} = **{group}x**, whatever the length or batch.",
            ],
            answer_text=f"{group}x",
            config=config_json(model),
        )
    saved = mha - gqa
    return memory_question(
        generator="gqa_saving",
        prompt=(
            f"**{model.name}** uses grouped-query attention. For a batch of **{batch}** sequence"
            f"{'s' if batch > 1 else ''} of **{seq_len:,} tokens** with an **fp16** cache, how much memory "
            "does GQA save compared with the same model using full multi-head attention? Answer in GiB."
        ),
        answer=saved,
        solution=[
            *steps,
            f"MHA: 2 x {model.layers} x {model.q_heads} x {model.head_dim} x 2 x {seq_len:,} x {batch} "
            f"= {mha:,} bytes ({_bytes(mha, 'GiB')}).",
            f"GQA: 2 x {model.layers} x {model.kv_heads} x {model.head_dim} x 2 x {seq_len:,} x {batch} "
            f"= {gqa:,} bytes ({_bytes(gqa, 'GiB')}).",
            f"Saved: {mha:,} - {gqa:,} = {saved:,} bytes = **{_bytes(saved, 'GiB')}**.",
        ],
        config=config_json(model),
    )


def score_matrix(rng: random.Random) -> NumericQuestion:
    model = MODELS[rng.choice(list(MODELS))]
    seq_len = rng.choice([1024, 2048, 4096, 8192, 32768])
    if rng.random() < 0.4:
        answer = seq_len * seq_len
        return count_question(
            generator="score_matrix",
            prompt=(
                f"A naive attention kernel materialises the full score matrix `Q K^T`. For **one head** "
                f"and **{seq_len:,} tokens**, how many entries does that matrix have (masked ones included)?"
            ),
            answer=answer,
            unit="entries",
            solution=[
                "One score per (query, key) pair: an n x n matrix per head; the causal mask does not "
                "shrink the stored matrix.",
                f"{seq_len:,} x {seq_len:,} = **{answer:,}** entries.",
            ],
        )
    dtype, bpe = _dtype(rng, model)
    answer = model.q_heads * seq_len * seq_len * bpe
    return memory_question(
        generator="score_matrix",
        prompt=(
            f"A naive attention kernel materialises the full score matrix of every head. For one layer of "
            f"**{model.name}** at **{seq_len:,} tokens**, batch 1, with scores in **{dtype}**, how much "
            "memory do the score matrices of all its query heads take? Answer in MiB or GiB."
        ),
        answer=answer,
        unit="GiB" if answer >= 2**30 else "MiB",
        units=["MiB", "GiB", "MB", "GB"],
        solution=[
            f"From the config: {model.q_heads} query heads; every head has its own n x n score matrix.",
            f"{model.q_heads} x {seq_len:,} x {seq_len:,} x {bpe} bytes = {answer:,} bytes "
            f"= {_bytes(answer, 'MiB')} = {_bytes(answer, 'GiB')}.",
            "FlashAttention never stores this matrix; the compute stays quadratic.",
        ],
        config=config_json(model),
    )


_WORK_LABELS = {
    "naive_proj": ("naive loop", "vector projections (one Q, K or V vector for one token)", "projections"),
    "naive_scores": ("naive loop", "attention-score elements", "score elements"),
    "cached_proj": ("cached loop", "vector projections (one Q, K or V vector for one token)", "projections"),
    "cached_scores": ("cached loop", "attention-score elements", "score elements"),
}


def naive_vs_cached(rng: random.Random) -> NumericQuestion:
    prompt_len, n_new = rng.choice([4, 8, 16, 100]), rng.choice([10, 20, 60, 100])
    which = rng.choice(list(_WORK_LABELS))
    loop, what, unit = _WORK_LABELS[which]
    work = naive_vs_cached_work(prompt_len, n_new)
    answer = work[which]
    last = prompt_len + n_new - 1
    if which == "naive_proj":
        steps = [f"Sum of 3t for t = {prompt_len} .. {last}: **{answer:,}**."]
    elif which == "naive_scores":
        steps = [f"Sum of t x t for t = {prompt_len} .. {last}: **{answer:,}**."]
    elif which == "cached_proj":
        steps = [f"Prefill 3 x {prompt_len} plus 3 per decode step x {n_new}: **{answer:,}**."]
    else:
        steps = [
            f"Prefill {prompt_len} x {prompt_len} = {prompt_len**2:,}, plus one row of t scores for each "
            f"decode step, t = {prompt_len + 1} .. {prompt_len + n_new}: total **{answer:,}**."
        ]
    return count_question(
        generator="naive_vs_cached",
        prompt=(
            f"A one-layer model gets a **{prompt_len}-token prompt** and generates **{n_new} new tokens**. "
            f"The naive loop re-runs the full causal forward pass {n_new} times, over lengths {prompt_len}, "
            f"{prompt_len + 1}, ..., {last}; a pass over t tokens computes 3t vector projections (Q, K, V) "
            "and the full t x t score matrix. The cached loop runs one prefill over the prompt (the same "
            f"work for t = {prompt_len}), then {n_new} decode steps; decode step j projects the one new "
            f"token (3 projections) and scores it against the {prompt_len} + j cached keys. "
            f"How many **{what}** does the **{loop}** compute?"
        ),
        answer=answer,
        unit=unit,
        solution=[
            "Naive: every step recomputes every earlier token, 3t projections and t^2 scores at length t.",
            "Cached: the prompt is projected and scored once; each step adds 3 projections and one row "
            "of scores.",
            *steps,
            f"For comparison: naive {work['naive_proj']:,} projections and {work['naive_scores']:,} scores; "
            f"cached {work['cached_proj']:,} projections and {work['cached_scores']:,} scores.",
        ],
    )
