# expect: failed
# diagnosis: the step attends only to the new token
# Fills the cache but never reads it.
import math

import torch


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, hd).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1) / math.sqrt(hd)).softmax(-1)
    if "k" in cache:
        cache["k"] = torch.cat([cache["k"], k], dim=2)
        cache["v"] = torch.cat([cache["v"], v], dim=2)
    else:
        cache["k"], cache["v"] = k, v
    y = att @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
