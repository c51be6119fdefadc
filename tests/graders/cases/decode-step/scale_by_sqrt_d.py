# expect: failed
# diagnosis: scores are divided by sqrt(d), not sqrt(head size)
import math

import torch


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, d // n_heads).transpose(1, 2) for t in (q, k, v))
    if "k" in cache:
        k = torch.cat([cache["k"], k], dim=2)
        v = torch.cat([cache["v"], v], dim=2)
    cache["k"], cache["v"] = k, v
    att = (q @ k.transpose(-2, -1) / math.sqrt(d)).softmax(-1)
    y = att @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
