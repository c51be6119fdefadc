# expect: failed
# diagnosis: generate_cached runs the last prompt token through decode_step again after prefill
# prefill and decode_step are right; generate_cached feeds the last prompt token to decode_step once
# more after the prefill, so that token sits in the cache twice.
import numpy as np


def softmax(z):
    z = z - z.max(axis=-1, keepdims=True)  # subtracting the max changes nothing but avoids overflow
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def prefill(params, tokens):
    """Run the whole prompt in one pass; keep its keys and values, return the last position's logits."""
    x = params["E"][tokens]  # (t, d): one embedding row per prompt token
    t, d = x.shape
    q = x @ params["W_q"]  # (t, d)
    k = x @ params["W_k"]  # (t, d)
    v = x @ params["W_v"]  # (t, d)

    scores = q @ k.T / np.sqrt(d)  # (t, t): row i scores query i against every key
    # The causal mask: position i may only see keys 0..i. Many positions are processed at
    # once here, so the future is present and has to be hidden.
    future = np.triu(np.ones((t, t), dtype=bool), k=1)
    scores = np.where(future, -np.inf, scores)
    ctx = softmax(scores) @ v  # (t, d)
    logits = (ctx @ params["W_o"]) @ params["W_lm"]  # (t, V)

    # Cache the keys and values: later tokens read them again at every step. The queries
    # are not cached: each is used once, by its own position, and never again.
    return {"k": k, "v": v}, logits[-1]  # only the last position predicts the next token


def decode_step(params, token, cache):
    """One new token: compute its q, k, v, append k and v to the cache, attend over the cache."""
    x = params["E"][token]  # (d,): a single token, not a sequence
    d = x.shape[0]
    q = x @ params["W_q"]  # (d,)
    k = x @ params["W_k"]
    v = x @ params["W_v"]

    # Append first: the new token attends to itself as well as to the past.
    cache["k"] = np.vstack([cache["k"], k])  # (t, d), one row longer
    cache["v"] = np.vstack([cache["v"], v])

    # No mask: everything in the cache is at or before this position. The future has not
    # been generated yet, so there is nothing to hide.
    scores = cache["k"] @ q / np.sqrt(d)  # (t,): one row of scores, not a matrix
    ctx = softmax(scores) @ cache["v"]  # (d,)
    return (ctx @ params["W_o"]) @ params["W_lm"]  # (V,)


def generate_cached(params, prompt, n_new):
    """The prompt followed by n_new greedily chosen tokens."""
    tokens = list(prompt)
    cache, logits = prefill(params, tokens)
    logits = decode_step(params, tokens[-1], cache)  # the mistake: the last prompt token again
    for _ in range(n_new):
        nxt = int(np.argmax(logits))  # greedy: the most likely next token
        tokens.append(nxt)
        logits = decode_step(params, nxt, cache)  # extends the cache by this token's k and v
    return tokens
