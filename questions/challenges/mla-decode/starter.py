import torch


def mla_attention(x, weights, n_heads, cache=None, base=10000.0):
    """x (B, T, d): the next T tokens, at positions S_past .. S_past + T - 1.

    weights: w_q (d, H*(d_nope + d_rope)), w_dkv (d, d_c), w_kr (d, d_rope),
             w_uk (H, d_c, d_nope), w_uv (H, d_c, d_v), w_o (H*d_v, d).
    cache: None, {} or {"c": (B, S_past, d_c), "k_rope": (B, S_past, d_rope) already rotated}.

    Returns (y (B, T, d), {"c": (B, S, d_c), "k_rope": (B, S, d_rope)}), S = S_past + T.
    Scores are scaled by 1 / sqrt(d_nope + d_rope); RoPE (half-split, hd = d_rope) rotates
    only q_rope and k_rope. With T = 1, absorb w_uk and w_uv: never build a per-head key or
    value for every cached position.
    """
    raise NotImplementedError
