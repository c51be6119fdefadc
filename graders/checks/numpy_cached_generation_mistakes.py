"""numpy-cached-generation's known mistakes: the sentences the diagnosis names, and the logits (or the
tokens) each of them produces from the same weights (graders/checks/numpy_cached_generation.py
compares a wrong answer with these to name the mistake).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graders.reference.numpy_generation import (
    Params,
    decode_step,
    prefill,
    softmax,
)

# Known mistakes, as they appear in report.diagnosis.
NOT_SCALED = "scores are not scaled by sqrt(d)"
SCALED_BY_D = "scores are divided by d instead of sqrt(d)"
SOFTMAX_AXIS = "softmax taken over the queries (axis 0) instead of the keys"
FIRST_ROW = "prefill returns the first position's logits, not the last"
ALL_ROWS = "prefill returns the logits of every position, not just the last"
CACHE_QUERIES = "the cache stores the queries, not the keys"
CACHE_SWAPPED = "cache['k'] and cache['v'] are swapped"
CACHE_EMBEDDINGS = "the cache stores the token embeddings, not their key and value projections"
NEW_KEY_LATE = "the new key is not appended before the scores (the newest position is left out)"
MASK_IN_DECODE = (
    "a causal mask applied in decode hides the newest key (the new query may see every cached key)"
)
IGNORES_CACHE = (
    "decode_step ignores the cache (recomputes the past instead of reading cache['k'] and cache['v'])"
)
NOT_APPENDED = "decode_step does not append the new key and value to cache['k'] and cache['v']"
HIDDEN_STATE = "decode_step keeps state outside the cache (a global or a closure)"
NO_PROMPT = "generate_cached returns only the new tokens, not the prompt followed by them"
NOT_NUMPY = "returned a torch tensor: this challenge is NumPy only"
LAST_TOKEN_TWICE = (
    "generate_cached runs the last prompt token through decode_step again after prefill: prefill already "
    "cached it and returned its logits, so the cache holds it twice and every later step attends to it twice"
)
KNOWN_MISTAKES = (
    NOT_SCALED,
    SCALED_BY_D,
    SOFTMAX_AXIS,
    FIRST_ROW,
    ALL_ROWS,
    CACHE_QUERIES,
    CACHE_SWAPPED,
    CACHE_EMBEDDINGS,
    NEW_KEY_LATE,
    MASK_IN_DECODE,
    IGNORES_CACHE,
    NOT_APPENDED,
    HIDDEN_STATE,
    NO_PROMPT,
    NOT_NUMPY,
    LAST_TOKEN_TWICE,
)


def _head(params: Params, ctx: np.ndarray) -> np.ndarray:
    return (ctx @ params["W_o"]) @ params["W_lm"]


def prefill_variants(params: Params, tokens: Sequence[int]) -> dict[str, np.ndarray]:
    """Last-position logits (or all of them) that the usual prefill mistakes produce."""
    d = params["W_q"].shape[0]
    x = params["E"][list(tokens)]  # (T, d)
    T = x.shape[0]
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]  # (T, d)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)

    def logits(scale: float, axis: int = -1) -> np.ndarray:
        scores = np.where(future, -np.inf, q @ k.T / scale)  # (T, T)
        return _head(params, softmax(scores, axis=axis) @ v)  # (T, V)

    return {
        NOT_SCALED: logits(1.0)[-1],
        SCALED_BY_D: logits(float(d))[-1],
        SOFTMAX_AXIS: logits(float(np.sqrt(d)), axis=0)[-1],
        FIRST_ROW: logits(float(np.sqrt(d)))[0],
        ALL_ROWS: logits(float(np.sqrt(d))),
    }


def decode_variants(
    params: Params, token: int, k_past: np.ndarray, v_past: np.ndarray
) -> dict[str, np.ndarray]:
    """Logits of the usual decode_step mistakes, given the cache before the step."""
    d = params["W_q"].shape[0]
    x = params["E"][token]  # (d,)
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]  # (d,)
    keys, values = np.vstack([k_past, k]), np.vstack([v_past, v])  # (t, d)
    return {
        NOT_SCALED: _head(params, softmax(keys @ q) @ values),
        SCALED_BY_D: _head(params, softmax(keys @ q / d) @ values),
        NEW_KEY_LATE: _head(params, softmax(k_past @ q / np.sqrt(d)) @ v_past),
        MASK_IN_DECODE: _head(params, values[0]),  # a (1, t) causal mask leaves only key 0 visible
        IGNORES_CACHE: _head(params, v),  # attends over the new token alone
    }


def generate_last_token_twice(params: Params, prompt: list[int], n_new: int) -> list[int]:
    """The known mistake: after prefill, the last prompt token goes through decode_step once more."""
    tokens = [int(t) for t in prompt]
    cache, _ = prefill(params, tokens)
    logits = decode_step(params, tokens[-1], cache)
    for _ in range(n_new):
        nxt = int(np.argmax(logits))
        tokens.append(nxt)
        logits = decode_step(params, nxt, cache)
    return tokens
