"""Naive and cached greedy generation over a one-layer NumPy model (the numpy-cached-generation challenge).

The model: token embeddings E (V, d); one causal attention layer with W_q, W_k, W_v,
W_o (d, d), no residual, no norm, scores scaled by sqrt(d); a projection W_lm (d, V)
back to the vocabulary. Everything is float64.

`generate_naive` re-runs the whole sequence for every new token. `generate_cached`
runs `prefill` once over the prompt, then one `decode_step` per new token, each
computing one query, key and value and attending over the cache. Both produce the
same tokens; the optional `work` counters show what the cache saves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Params = Mapping[str, np.ndarray]
PARAM_NAMES = ("E", "W_q", "W_k", "W_v", "W_o", "W_lm")


@dataclass
class Work:
    """Counts of token projections (q, k and v each count one per token) and attention score elements."""

    projections: int = 0
    score_elements: int = 0


def init_params(rng: np.random.Generator, vocab: int, d: int, scale: float = 0.1) -> dict[str, np.ndarray]:
    """Random float64 weights for the one-layer model."""
    params = {"E": rng.normal(size=(vocab, d)) * scale}
    for name in ("W_q", "W_k", "W_v", "W_o"):
        params[name] = rng.normal(size=(d, d)) * scale
    params["W_lm"] = rng.normal(size=(d, vocab)) * scale
    return params


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    z = z - z.max(axis=axis, keepdims=True)  # subtract the max so exp cannot overflow
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _causal_attention_logits(
    params: Params, tokens: Sequence[int], work: Work | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pass over a whole sequence: (k, v, logits) with logits for every position."""
    d = params["W_q"].shape[0]
    x = params["E"][np.asarray(tokens, dtype=np.int64)]  # (T, d)
    T = x.shape[0]
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]  # (T, d) each
    scores = q @ k.T / np.sqrt(d)  # (T, T)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)  # position i sees keys 0..i
    scores = np.where(future, -np.inf, scores)
    ctx = softmax(scores, axis=-1) @ v  # (T, d)
    logits = (ctx @ params["W_o"]) @ params["W_lm"]  # (T, V)
    if work is not None:
        work.projections += 3 * T
        work.score_elements += T * T
    return k, v, logits


def forward(params: Params, tokens: Sequence[int], work: Work | None = None) -> np.ndarray:
    """Logits (T, V) for every position of `tokens`, recomputing everything."""
    return _causal_attention_logits(params, tokens, work)[2]


def prefill(
    params: Params, tokens: Sequence[int], work: Work | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One batched, causally masked pass over the prompt: ({"k": (t, d), "v": (t, d)}, logits (V,))."""
    k, v, logits = _causal_attention_logits(params, tokens, work)
    return {"k": k, "v": v}, logits[-1]  # keep keys and values, drop the queries


def decode_step(params: Params, token: int, cache: dict[str, Any], work: Work | None = None) -> np.ndarray:
    """Process one token against the cache: append its key and value, return its logits (V,)."""
    d = params["W_q"].shape[0]
    x = params["E"][int(token)]  # (d,)
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]  # (d,) each
    cache["k"] = np.vstack([cache["k"], k])  # (t, d): the new key goes in before the scores
    cache["v"] = np.vstack([cache["v"], v])  # (t, d)
    # No mask: every key in the cache is at or before the new position.
    scores = cache["k"] @ q / np.sqrt(d)  # (t,)
    ctx = softmax(scores) @ cache["v"]  # (d,)
    if work is not None:
        work.projections += 3
        work.score_elements += scores.shape[0]
    return (ctx @ params["W_o"]) @ params["W_lm"]  # (V,)


def generate_naive(params: Params, prompt: Sequence[int], n_new: int, work: Work | None = None) -> list[int]:
    """Greedy generation that re-runs the whole sequence for every new token."""
    tokens = [int(t) for t in prompt]
    for _ in range(n_new):
        logits = forward(params, tokens, work)[-1]  # T rows computed, the last one used
        tokens.append(int(np.argmax(logits)))
    return tokens


def generate_cached(params: Params, prompt: Sequence[int], n_new: int, work: Work | None = None) -> list[int]:
    """Greedy generation: prefill the prompt once, then one decode step per new token.

    Every generated token goes through decode_step, so the cache ends up covering
    the whole output (the last step's logits are not needed for the result).
    """
    tokens = [int(t) for t in prompt]
    cache, logits = prefill(params, tokens, work)
    for _ in range(n_new):
        nxt = int(np.argmax(logits))
        tokens.append(nxt)
        logits = decode_step(params, nxt, cache, work)
    return tokens


def greedy_margin(params: Params, prompt: Sequence[int], n_new: int) -> float:
    """The smallest gap between the top two logits over the greedy choices of a cached run.

    A grader compares token lists only when this is comfortably above rounding noise,
    so that a correct solution computing in a different order cannot pick another token.
    """
    tokens = [int(t) for t in prompt]
    cache, logits = prefill(params, tokens)
    margin = np.inf
    for _ in range(n_new):
        top2 = np.sort(logits)[-2:]
        margin = min(margin, float(top2[1] - top2[0]))
        nxt = int(np.argmax(logits))
        tokens.append(nxt)
        logits = decode_step(params, nxt, cache)
    return float(margin)
