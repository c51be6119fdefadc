import math

import torch
import torch.nn.functional as F


def causal_self_attention(x, w_qkv, w_o, n_heads):
    """Multi-head causal self-attention.

    x: (B, T, d), w_qkv: (d, 3d), w_o: (d, d); returns (B, T, d).
    """
    B, T, d = x.shape
    hd = d // n_heads  # the head size: each head works in hd dimensions

    # Project once, then give each head its own slice of columns h*hd:(h+1)*hd.
    q, k, v = (x @ w_qkv).split(d, dim=-1)  # each (B, T, d)
    q = q.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)
    k = k.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)
    v = v.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)

    # Fix 2: a dot product of two hd-dimensional vectors grows like sqrt(hd), so that
    # is what keeps the scores near unit size. sqrt(d) would flatten every row.
    att = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, n_heads, T, T)

    # Fix 1: mask *before* the softmax. -inf scores become exactly 0 weights and each
    # row is normalised over the keys it may see (0..i). Zeroing after the softmax
    # leaves the future in the denominator, so earlier outputs depend on later tokens.
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
    att = att.masked_fill(~mask, float("-inf"))
    att = F.softmax(att, dim=-1)

    y = att @ v  # (B, n_heads, T, hd)

    # Fix 3: bring the positions back next to each other before flattening the heads.
    # Without the transpose, reshape still succeeds but each row mixes positions.
    y = y.transpose(1, 2).reshape(B, T, d)  # (B, T, n_heads, hd) -> (B, T, d)
    return y @ w_o
