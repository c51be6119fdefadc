# expect: passed
# Correct but wasteful: reuses a prefill's habit and builds the whole (t, t) additive causal mask
# in float32, then keeps its last row. The cost report shows its largest tensor at 2x the
# reference's (the whole cache, B=2) on a 512-token cache (tests/graders/checks/test_cost_report.py).
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
    mask = torch.full((t, t), float("-inf")).triu(1)  # (t, t): every position's row, for one query
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd) + mask[t - 1]  # (B, n_heads, 1, t)
    y = torch.softmax(scores, dim=-1) @ v
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
