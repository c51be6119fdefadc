# expect: failed
# diagnosis: should be a tensor, got tuple
# Returns (y, cache) instead of y alone.
import math

import torch


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, hd).transpose(1, 2) for t in (q, k, v))
    if "k" in cache:
        k = torch.cat([cache["k"], k], dim=2)
        v = torch.cat([cache["v"], v], dim=2)
    cache["k"], cache["v"] = k, v
    y = (q @ k.transpose(-2, -1) / math.sqrt(hd)).softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o, cache
