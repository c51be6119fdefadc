# expect: failed
# diagnosis: the cache keeps only the newest token
# Attends over the old cache plus the new token, but stores only the new token.
import math

import torch


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, hd).transpose(1, 2) for t in (q, k, v))
    k_all = torch.cat([cache["k"], k], dim=2) if "k" in cache else k
    v_all = torch.cat([cache["v"], v], dim=2) if "v" in cache else v
    cache["k"], cache["v"] = k, v
    att = (q @ k_all.transpose(-2, -1) / math.sqrt(hd)).softmax(-1)
    y = att @ v_all
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
