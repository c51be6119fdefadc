# expect: passed
# Correct but wasteful: folds the two output projections into one (d, V) matrix, W_o @ W_lm, as an
# "optimisation", but inside decode_step, so every token pays d^2 V multiply-adds to rebuild it
# (where ctx @ W_o costs d^2). The cost report shows 6.77x the reference's multiply-adds on its
# 511-token cache, d=64, V=128 (tests/graders/checks/test_cost_report.py).
import numpy as np


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def prefill(params, tokens):
    x = params["E"][tokens]
    t, d = x.shape
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    scores = q @ k.T / np.sqrt(d)
    scores[np.triu_indices(t, 1)] = -np.inf
    logits = (_softmax(scores) @ v) @ params["W_o"] @ params["W_lm"]
    return {"k": k, "v": v}, logits[-1]


def decode_step(params, token, cache):
    x = params["E"][token]
    d = x.shape[0]
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    cache["k"] = np.vstack([cache["k"], k])
    cache["v"] = np.vstack([cache["v"], v])
    scores = cache["k"] @ q / np.sqrt(d)
    to_logits = params["W_o"] @ params["W_lm"]  # (d, V), the same every step
    return (_softmax(scores) @ cache["v"]) @ to_logits


def generate_cached(params, prompt, n_new):
    out = list(prompt)
    cache, logits = prefill(params, out)
    for _ in range(n_new):
        out.append(int(logits.argmax()))
        logits = decode_step(params, out[-1], cache)
    return out
