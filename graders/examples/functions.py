"""Run cases of the challenges whose entry points are plain functions: kv-cache-bytes,
numpy-cached-generation, speculative-decoding and sampling. Each case calls the entry points
once or twice and compares with the reference on the same inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from graders.checks.attention_common import submission_context
from graders.checks.report import Mismatch
from graders.examples.spec import (
    SEED,
    Compared,
    Example,
    Param,
    RunSpec,
    at_most,
    divisible,
    generator,
    randn,
)
from graders.reference import kv_memory, numpy_generation, sampling, speculative
from graders.sandbox.protocol import SubmissionLink


def _bytes_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    n_layers, n_heads, n_kv, hd = (
        values["n_layers"],
        values["n_heads"],
        values["n_kv_heads"],
        values["head_dim"],
    )
    seq_len, batch, bpe = values["seq_len"], values["batch"], values["bytes_per_element"]
    args = (n_layers, n_kv, hd, seq_len)
    with submission_context(f"calling kv_cache_bytes{args + (batch, bpe)}"):
        got = session.call("kv_cache_bytes", *args, batch=batch, bytes_per_element=bpe)
    out = [Compared("kv_cache_bytes(...)", got, kv_memory.kv_cache_bytes(*args, batch, bpe), exact=True)]
    config = {
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "hidden_size": n_heads * hd,
        "num_key_value_heads": n_kv,
    }
    if not session.has("kv_cache_bytes_from_config"):
        raise Mismatch(
            "your code has no top-level `kv_cache_bytes_from_config`: define it beside kv_cache_bytes"
        )
    with submission_context(f"calling kv_cache_bytes_from_config({config}, {seq_len}, {batch}, {bpe})"):
        got_config = session.call(
            "kv_cache_bytes_from_config", config, seq_len, batch=batch, bytes_per_element=bpe
        )
    want_config = kv_memory.kv_cache_bytes_from_config(config, seq_len, batch, bpe)
    out.append(
        Compared(
            f"kv_cache_bytes_from_config on a Llama-style config {config}",
            got_config,
            want_config,
            exact=True,
        )
    )
    return out


KV_CACHE_BYTES = RunSpec(
    slug="kv-cache-bytes",
    entry_point="kv_cache_bytes",
    also_calls=("kv_cache_bytes_from_config",),
    summary=(
        "Calls kv_cache_bytes(...) and kv_cache_bytes_from_config(...) on a Llama-style config with"
        " the same sizes."
    ),
    params=(
        Param("n_layers", "Layers", 32, 1, 512),
        Param("n_heads", "Attention heads", 32, 1, 512),
        Param("n_kv_heads", "Key-value heads", 8, 1, 512, "divides the attention heads"),
        Param("head_dim", "Head size", 128, 1, 1024),
        Param("seq_len", "Sequence length", 4096, 1, 10_000_000),
        Param("batch", "Batch", 1, 1, 4096),
        Param("bytes_per_element", "Bytes per element", 2, 1, 8, "2 for fp16/bf16, 1 for int8"),
    ),
    examples=(
        Example(
            "Llama-3-8B shape, fp16",
            {
                "n_layers": 32,
                "n_heads": 32,
                "n_kv_heads": 8,
                "head_dim": 128,
                "seq_len": 4096,
                "batch": 1,
                "bytes_per_element": 2,
            },
        ),
        Example(
            "multi-head, a batch of 4",
            {
                "n_layers": 12,
                "n_heads": 12,
                "n_kv_heads": 12,
                "head_dim": 64,
                "seq_len": 1024,
                "batch": 4,
                "bytes_per_element": 4,
            },
        ),
    ),
    case=_bytes_case,
    rules=(divisible("n_heads", "n_kv_heads"),),
)


def _generation_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    rng = np.random.default_rng(values["seed"])
    params = numpy_generation.init_params(rng, values["vocab"], values["d"])
    prompt = [int(t) for t in rng.integers(0, values["vocab"], values["prompt"])]
    with submission_context(f"calling prefill(params, {prompt})"):
        got = session.call("prefill", params, prompt)
    _, want_logits = numpy_generation.prefill(params, prompt)
    logits = got[1] if isinstance(got, tuple | list) and len(got) == 2 else got
    out = [Compared("prefill's logits of the last position (V,)", logits, torch.from_numpy(want_logits))]
    if not session.has("generate_cached"):
        raise Mismatch(
            "your code has no top-level `generate_cached`: define it beside prefill and decode_step"
        )
    with submission_context(f"calling generate_cached(params, {prompt}, {values['n_new']})"):
        tokens = session.call("generate_cached", params, prompt, values["n_new"])
    want = numpy_generation.generate_cached(params, prompt, values["n_new"])
    out.append(
        Compared(
            f"generate_cached(params, prompt, {values['n_new']})", tokens, [int(t) for t in want], exact=True
        )
    )
    return out


NUMPY_CACHED_GENERATION = RunSpec(
    slug="numpy-cached-generation",
    entry_point="generate_cached",
    also_calls=("prefill",),
    summary=(
        "Random float64 weights for the one-layer model; calls prefill(params, prompt) and "
        "generate_cached(params, prompt, n_new) on a random prompt."
    ),
    params=(
        Param("vocab", "Vocabulary size V", 11, 2, 64),
        Param("d", "Width d", 8, 1, 32),
        Param("prompt", "Prompt tokens", 3, 1, 16),
        Param("n_new", "New tokens", 4, 0, 16),
        SEED,
    ),
    examples=(
        Example(
            "a short prompt",
            {"vocab": 11, "d": 8, "prompt": 3, "n_new": 4, "seed": 0},
        ),
        Example(
            "a single-token prompt",
            {"vocab": 7, "d": 4, "prompt": 1, "n_new": 5, "seed": 1},
        ),
    ),
    case=_generation_case,
)


def _speculative_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    gamma, V, agreement = values["gamma"], values["vocab"], values["agreement"]
    gen = generator(values["seed"])
    p_logits = randn(gen, gamma + 1, V, scale=2.0)
    q_logits = agreement * p_logits[:gamma] + (1 - agreement) * randn(gen, gamma, V, scale=2.0)
    p_probs, q_probs = p_logits.softmax(-1), q_logits.softmax(-1)
    draft = torch.multinomial(q_probs, 1, generator=gen).reshape(gamma)
    u_accept = torch.rand(gamma, generator=gen)
    u_sample = float(torch.rand(1, generator=gen))
    with submission_context(f"calling accept_draft(draft_tokens={draft.tolist()}, ...)"):
        got = session.call("accept_draft", draft, q_probs, p_probs, u_accept, u_sample)
    want = speculative.accept_draft(draft, q_probs, p_probs, u_accept, u_sample)
    return [Compared(f"accepted tokens then the sampled one (draft {draft.tolist()})", got, want, exact=True)]


SPECULATIVE_DECODING = RunSpec(
    slug="speculative-decoding",
    entry_point="accept_draft",
    summary=(
        "Random draft and target distributions; the draft proposes gamma tokens; calls "
        "accept_draft(...) with seeded uniform draws. agreement 1 makes the draft's distributions "
        "equal the target's."
    ),
    params=(
        Param("gamma", "Draft tokens γ", 4, 1, 8),
        Param("vocab", "Vocabulary size V", 6, 2, 32),
        Param(
            "agreement", "Draft-target agreement", 0.5, 0.0, 1.0, "0: unrelated, 1: the same distributions"
        ),
        SEED,
    ),
    examples=(
        Example(
            "a draft that mostly agrees",
            {"gamma": 4, "vocab": 6, "agreement": 0.8, "seed": 0},
        ),
        Example(
            "an unrelated draft",
            {"gamma": 3, "vocab": 5, "agreement": 0.0, "seed": 1},
        ),
        Example(
            "a perfect draft (the bonus token)",
            {"gamma": 2, "vocab": 4, "agreement": 1.0, "seed": 2},
        ),
    ),
    case=_speculative_case,
)


def _sampling_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    gen = generator(values["seed"])
    logits = randn(gen, values["batch"], values["vocab"], scale=2.0)
    u = torch.rand(values["batch"], generator=gen)
    knobs = {k: values[k] for k in ("temperature", "top_k", "top_p")}
    said = ", ".join(f"{k}={v}" for k, v in knobs.items())
    with submission_context(f"calling filter_probs(logits, {said}) with logits {tuple(logits.shape)}"):
        probs = session.call("filter_probs", logits, **knobs)
    out = [
        Compared(
            f"filter_probs(logits, {said}) (B, V)",
            probs,
            sampling.filter_probs(logits.double(), **knobs).float(),
        )
    ]
    with submission_context(f"calling sample(logits, u, {said})"):
        tokens = session.call("sample", logits, u, **knobs)
    out.append(
        Compared(
            f"sample(logits, u={[round(x, 3) for x in u.tolist()]}, ...) (B,)",
            tokens,
            sampling.sample(logits, u, **knobs),
            exact=True,
        )
    )
    return out


SAMPLING = RunSpec(
    slug="sampling",
    entry_point="filter_probs",
    also_calls=("sample",),
    summary=(
        "Random logits (batch, V) and uniform draws u; calls filter_probs(...) and sample(...) with"
        " the knobs."
    ),
    params=(
        Param("batch", "Batch", 2, 1, 8),
        Param("vocab", "Vocabulary size V", 8, 2, 64),
        Param("temperature", "Temperature", 1.0, 0.0, 5.0, "0 is greedy"),
        Param("top_k", "top_k", 0, 0, 64, "0 keeps every token"),
        Param("top_p", "top_p", 1.0, 0.01, 1.0, "1.0 keeps every token"),
        SEED,
    ),
    examples=(
        Example(
            "temperature only",
            {"batch": 2, "vocab": 8, "temperature": 0.7, "top_k": 0, "top_p": 1.0, "seed": 0},
        ),
        Example(
            "top-k then top-p",
            {"batch": 3, "vocab": 10, "temperature": 1.0, "top_k": 5, "top_p": 0.8, "seed": 1},
        ),
        Example(
            "greedy",
            {"batch": 2, "vocab": 6, "temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 2},
        ),
    ),
    case=_sampling_case,
    rules=(at_most("top_k", "vocab"),),
)

__all__ = ["KV_CACHE_BYTES", "NUMPY_CACHED_GENERATION", "SAMPLING", "SPECULATIVE_DECODING"]
