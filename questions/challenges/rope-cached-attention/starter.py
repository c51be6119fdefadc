import math

import torch
import torch.nn.functional as F


def apply_rope(x, positions, base=10000.0):
    """Rotate x (B, H, T, hd) at integer positions (T,) or (B, T).

    theta_i = base ** (-2i / hd) for i = 0 .. hd/2 - 1; component i pairs with i + hd/2:
        out[i]        = x[i] cos(p theta_i) - x[i + hd/2] sin(p theta_i)
        out[i + hd/2] = x[i + hd/2] cos(p theta_i) + x[i] sin(p theta_i)
    Returns a tensor of x's shape.
    """
    raise NotImplementedError


def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=10000.0):
    """Causal self-attention with RoPE on q and k, continuing from a cache.

    x:      (B, T, d), the next T tokens (a prompt, a chunk of one, or one token)
    cache:  None, {} or {"k": (B, n_heads, S_past, hd) rotated keys, "v": (B, n_heads, S_past, hd)}
    Returns (y, cache): y (B, T, d); the cache holds all S_past + T tokens, keys rotated.
    """
    raise NotImplementedError
