# expect: passed
# A different style: prefill feeds the prompt through decode_step one token at a time
# (exact, because of the causal mask), and the loop appends NumPy integers.
import numpy as np


def decode_step(params, token, cache):
    x = params["E"][token]
    q, k, v = (x @ params[name] for name in ("W_q", "W_k", "W_v"))
    cache["k"] = np.concatenate([cache["k"], k[np.newaxis, :]], axis=0)
    cache["v"] = np.concatenate([cache["v"], v[np.newaxis, :]], axis=0)
    scores = np.einsum("td,d->t", cache["k"], q) / np.sqrt(q.size)
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    return np.einsum("t,td->d", weights, cache["v"]) @ params["W_o"] @ params["W_lm"]


def prefill(params, tokens):
    d = params["W_k"].shape[1]
    cache = {"k": np.zeros((0, d)), "v": np.zeros((0, d)), "note": "built token by token"}
    for token in tokens:
        logits = decode_step(params, token, cache)
    return cache, logits


def generate_cached(params, prompt, n_new):
    cache, logits = prefill(params, prompt)
    out = list(prompt)
    for _ in range(n_new):
        out.append(np.argmax(logits))
        logits = decode_step(params, out[-1], cache)
    return out
