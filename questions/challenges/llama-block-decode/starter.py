import torch


def llama_block(x, weights, n_heads, n_kv_heads, cache=None, base=10000.0, eps=1e-5):
    """x (B, T, d): the next T tokens, at positions S_past .. S_past + T - 1.

    weights: attn_norm (d,), w_q (d, H*hd), w_k (d, H_kv*hd), w_v (d, H_kv*hd), w_o (H*hd, d),
             mlp_norm (d,), w_gate (d, f), w_up (d, f), w_down (f, d); hd = w_q.shape[1] // n_heads.
    cache: None, {} or {"k": (B, H_kv, S_past, hd) already rotated, "v": (B, H_kv, S_past, hd)}.

    Returns (y (B, T, d), {"k": (B, H_kv, S, hd), "v": (B, H_kv, S, hd)}), S = S_past + T:
        h = x + attention(rmsnorm(x, attn_norm)),  y = h + mlp(rmsnorm(h, mlp_norm)),
        rmsnorm(x, w) = x / sqrt(mean(x**2, -1) + eps) * w,  mlp(z) = (silu(z @ w_gate) * (z @ w_up)) @ w_down.
    Query head i reads kv head i // (n_heads // n_kv_heads); ValueError when that does not divide.
    """
    raise NotImplementedError
