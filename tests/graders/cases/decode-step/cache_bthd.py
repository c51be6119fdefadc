# expect: failed
# diagnosis: the cache is stored as (B, t, n_heads, hd)
# Caches before moving the heads forward, concatenating on the time axis dim=1.
import math

import torch


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, hd) for t in (q, k, v))  # (B, 1, h, hd)
    if "k" in cache:
        k = torch.cat([cache["k"], k], dim=1)
        v = torch.cat([cache["v"], v], dim=1)
    cache["k"], cache["v"] = k, v  # (B, t, h, hd)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1) / math.sqrt(hd)).softmax(-1)
    y = att @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
