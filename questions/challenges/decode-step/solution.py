import math

import torch
import torch.nn.functional as F


def step(x, w_qkv, w_o, n_heads, cache):
    """One decode step of causal self-attention with a KV cache.

    x: (B, 1, d); cache: dict with "k" and "v" of shape (B, n_heads, t, hd) once filled.
    Returns (B, 1, d), equal to row t-1 of the full forward pass over the t tokens.
    """
    B, T, d = x.shape  # T == 1
    hd = d // n_heads

    # Project only the new token. The past tokens' keys and values never change,
    # which is why they can be cached instead of recomputed.
    q, k, v = (x @ w_qkv).split(d, dim=-1)  # each (B, 1, d)
    q = q.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, 1, hd)
    k = k.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, 1, hd)
    v = v.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, 1, hd)

    # Append first, then attend: the new token must also see itself.
    if "k" in cache:
        k = torch.cat([cache["k"], k], dim=2)  # (B, n_heads, t, hd)
        v = torch.cat([cache["v"], v], dim=2)  # (B, n_heads, t, hd)
    cache["k"], cache["v"] = k, v  # everything a later step needs, nothing more

    # One query, and it is the newest position: every cached key is in its past,
    # so there is nothing to mask.
    att = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, n_heads, 1, t)
    att = F.softmax(att, dim=-1)
    y = att @ v  # (B, n_heads, 1, hd)

    y = y.transpose(1, 2).reshape(B, T, d)  # (B, 1, d), heads side by side
    return y @ w_o
