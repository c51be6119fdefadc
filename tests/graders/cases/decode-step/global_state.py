# expect: failed
# diagnosis: keep no state between calls
# diagnosis: the step ignored a change to the cached keys and values
# Keeps the past in a module-level list and only mirrors it into the cache.
import math

import torch

PAST_K, PAST_V = [], []


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, hd).transpose(1, 2) for t in (q, k, v))
    if "k" not in cache:
        PAST_K.clear()
        PAST_V.clear()
    PAST_K.append(k)
    PAST_V.append(v)
    k_all, v_all = torch.cat(PAST_K, dim=2), torch.cat(PAST_V, dim=2)
    cache["k"], cache["v"] = k_all, v_all
    att = (q @ k_all.transpose(-2, -1) / math.sqrt(hd)).softmax(-1)
    y = att @ v_all
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
