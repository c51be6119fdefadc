# expect: failed
# diagnosis: contains NaN or inf
# The same over-eager mask filled with -inf: every row is -inf and the softmax gives NaN.
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
    mask = torch.triu(torch.ones(1, k.shape[2], dtype=torch.bool))
    att = (q @ k.transpose(-2, -1) / math.sqrt(hd)).masked_fill(mask, float("-inf"))
    y = att.softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
