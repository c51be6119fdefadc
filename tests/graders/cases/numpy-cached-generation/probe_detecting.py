# expect: failed
# diagnosis: decode_step ignores the cache
# Hostile: prefill keeps the prompt's tokens in the cache dict (an extra key the grader keeps),
# decode_step appends to them and recomputes the whole causal pass from the tokens, ignoring
# cache['k'] and cache['v'], unless the call looks like the grader's probe: a cache whose
# first row is not the key it would have computed (the probe used to change every row).
import numpy as np


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _forward(params, tokens):
    x = params["E"][tokens]  # (t, d)
    t, d = x.shape
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    scores = np.where(np.triu(np.ones((t, t), dtype=bool), k=1), -np.inf, q @ k.T / np.sqrt(d))
    return k, v, (softmax(scores) @ v @ params["W_o"]) @ params["W_lm"]


def prefill(params, tokens):
    k, v, logits = _forward(params, list(tokens))
    return {"k": k, "v": v, "tokens": list(tokens)}, logits[-1]


def decode_step(params, token, cache):
    tokens = cache.get("tokens")
    first = None if not tokens else params["E"][tokens[0]] @ params["W_k"]
    if tokens and len(tokens) == len(cache["k"]) and np.allclose(cache["k"][0], first):
        tokens = tokens + [token]
        k, v, logits = _forward(params, tokens)  # the whole pass again, cache ignored
        cache.update(k=k, v=v, tokens=tokens)
        return logits[-1]
    cache.pop("tokens", None)  # the probe: be honest with this cache from now on
    x = params["E"][token]
    d = x.shape[0]
    q = x @ params["W_q"]
    cache["k"] = np.vstack([cache["k"], x @ params["W_k"]])
    cache["v"] = np.vstack([cache["v"], x @ params["W_v"]])
    return (softmax(cache["k"] @ q / np.sqrt(d)) @ cache["v"] @ params["W_o"]) @ params["W_lm"]


def generate_cached(params, prompt, n_new):
    tokens = list(prompt)
    cache, logits = prefill(params, tokens)
    for _ in range(n_new):
        tokens.append(int(np.argmax(logits)))
        logits = decode_step(params, tokens[-1], cache)
    return tokens
