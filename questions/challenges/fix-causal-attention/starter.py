import math

import torch
import torch.nn.functional as F


def causal_self_attention(x, w_qkv, w_o, n_heads):
    """Multi-head causal self-attention.

    x: (B, T, d), w_qkv: (d, 3d), w_o: (d, d); returns (B, T, d).
    This version runs and returns the right shape, but it has three bugs.
    """
    B, T, d = x.shape
    hd = d // n_heads

    q, k, v = (x @ w_qkv).split(d, dim=-1)  # each (B, T, d)
    q = q.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)
    k = k.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)
    v = v.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)

    att = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, n_heads, T, T)
    att = F.softmax(att, dim=-1)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = att.masked_fill(~mask, 0.0)

    y = att @ v  # (B, n_heads, T, hd)
    y = y.reshape(B, T, d)
    return y @ w_o
