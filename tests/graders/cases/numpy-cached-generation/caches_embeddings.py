# expect: failed
# diagnosis: the cache stores the token embeddings, not their key and value projections
# Caches the embeddings and re-projects the whole cache every step: correct logits, but it
# stores the wrong thing and redoes the very work a KV cache exists to save.
import numpy as np


def _attend(params, q, x_all):
    k, v = x_all @ params["W_k"], x_all @ params["W_v"]
    scores = k @ q / np.sqrt(q.shape[-1])
    w = np.exp(scores - scores.max())
    return ((w / w.sum()) @ v) @ params["W_o"] @ params["W_lm"]


def prefill(params, tokens):
    x = params["E"][tokens]
    logits = _attend(params, x[-1] @ params["W_q"], x)  # the last position sees every token
    return {"k": x, "v": x}, logits


def decode_step(params, token, cache):
    x = params["E"][token]
    cache["k"] = np.vstack([cache["k"], x])
    cache["v"] = np.vstack([cache["v"], x])
    return _attend(params, x @ params["W_q"], cache["k"])


def generate_cached(params, prompt, n_new):
    cache, logits = prefill(params, prompt)
    out = list(prompt)
    for _ in range(n_new):
        out.append(int(np.argmax(logits)))
        logits = decode_step(params, out[-1], cache)
    return out
