# expect: failed
# diagnosis: decode_step keeps state outside the cache
# Prefill also stashes the keys and values in a module-level dict, and decode_step reads
# the past from there: fine for one sequence, wrong as soon as two are interleaved.
import numpy as np

_PAST = {}


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def prefill(params, tokens):
    x = params["E"][tokens]
    t, d = x.shape
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    scores = np.where(np.tri(t, dtype=bool), q @ k.T / np.sqrt(d), -np.inf)
    logits = (_softmax(scores) @ v) @ params["W_o"] @ params["W_lm"]
    _PAST["k"], _PAST["v"] = k, v
    return {"k": k.copy(), "v": v.copy()}, logits[-1]


def decode_step(params, token, cache):
    x = params["E"][token]
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    _PAST["k"] = np.vstack([_PAST["k"], k])
    _PAST["v"] = np.vstack([_PAST["v"], v])
    cache["k"], cache["v"] = np.vstack([cache["k"], k]), np.vstack([cache["v"], v])
    scores = _PAST["k"] @ q / np.sqrt(x.size)
    return (_softmax(scores) @ _PAST["v"]) @ params["W_o"] @ params["W_lm"]


def generate_cached(params, prompt, n_new):
    cache, logits = prefill(params, prompt)
    out = list(prompt)
    for _ in range(n_new):
        out.append(int(np.argmax(logits)))
        logits = decode_step(params, out[-1], cache)
    return out
