# expect: failed
# diagnosis: cache['k'] is stored transposed, as (B, n_heads, hd, t)
# Keeps k already transposed for the scores, growing it along the last axis.
import math

import torch


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, hd).transpose(1, 2) for t in (q, k, v))
    k_t = k.transpose(-2, -1)  # (B, h, hd, 1)
    if "k" in cache:
        k_t = torch.cat([cache["k"], k_t], dim=-1)
        v = torch.cat([cache["v"], v], dim=2)
    cache["k"], cache["v"] = k_t, v
    att = (q @ k_t / math.sqrt(hd)).softmax(-1)
    y = att @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
