# expect: failed
# diagnosis: decode_step ignores the cache
# Keeps the token ids in the cache and re-runs the whole sequence every step: right logits,
# but cache["k"] and cache["v"] are never read.
import numpy as np


def _forward(params, tokens):
    x = params["E"][tokens]
    t, d = x.shape
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    scores = np.where(np.tri(t, dtype=bool), q @ k.T / np.sqrt(d), -np.inf)
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return k, v, (w @ v) @ params["W_o"] @ params["W_lm"]


def prefill(params, tokens):
    k, v, logits = _forward(params, tokens)
    return {"k": k, "v": v, "tokens": list(tokens)}, logits[-1]


def decode_step(params, token, cache):
    cache["tokens"] = cache["tokens"] + [token]
    cache["k"], cache["v"], logits = _forward(params, cache["tokens"])
    return logits[-1]


def generate_cached(params, prompt, n_new):
    cache, logits = prefill(params, prompt)
    out = list(prompt)
    for _ in range(n_new):
        out.append(int(np.argmax(logits)))
        logits = decode_step(params, out[-1], cache)
    return out
