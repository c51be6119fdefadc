# expect: failed
# diagnosis: the mask hides every key
# Strictly-lower mask with no offset and a finite fill: every key is hidden, the softmax turns uniform.
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
    t = k.shape[2]
    mask = torch.tril(torch.ones(1, t, dtype=torch.bool), diagonal=-1)
    att = (q @ k.transpose(-2, -1) / math.sqrt(hd)).masked_fill(~mask, -1e9)
    y = att.softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
