# expect: failed
# diagnosis: RoPE rotates each head's whole query: only q_rope, the last
# Rotates each head's whole query, q_nope included.
import math

import torch


def apply_rope(x, positions, base):
    """x (..., T, hd) rotated at positions (T,): the half-split pairs (i, i + hd/2)."""
    hd = x.shape[-1]
    theta = base ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)  # (hd/2,)
    angles = positions.float()[:, None] * theta  # (T, hd/2)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def mla_attention(x, weights, n_heads, cache=None, base=10000.0):
    """x (B, T, d): the next T tokens -> (y (B, T, d), {"c": (B, S, d_c), "k_rope": (B, S, d_rope)})."""
    B, T, _ = x.shape
    w_uk, w_uv = weights["w_uk"], weights["w_uv"]  # (H, d_c, d_nope), (H, d_c, d_v)
    d_nope, d_rope = w_uk.shape[2], weights["w_kr"].shape[1]
    s_past = cache["c"].shape[1] if cache else 0
    positions = torch.arange(s_past, s_past + T)  # the new tokens continue after the cache

    q = (x @ weights["w_q"]).view(B, T, n_heads, d_nope + d_rope).transpose(1, 2)  # (B, H, T, dn + dr)
    q = apply_rope(q, positions, base)
    q_nope, q_rope = q[..., :d_nope], q[..., d_nope:]
    c = x @ weights["w_dkv"]  # (B, T, d_c): the latent, never rotated
    k_rope = apply_rope(x @ weights["w_kr"], positions, base)  # (B, T, d_rope): one head for all
    if cache:  # the cache holds rotated RoPE keys: only the new ones are rotated
        c = torch.cat([cache["c"], c], dim=1)  # (B, S, d_c)
        k_rope = torch.cat([cache["k_rope"], k_rope], dim=1)  # (B, S, d_rope)
    S = c.shape[1]

    # Absorb w_uk into the query: q_nope[h] . (c_j @ w_uk[h]) = (q_nope[h] @ w_uk[h].T) . c_j, so no
    # per-head key of a cached position is ever built; each head scores the latent directly.
    # einsum multiplies (H * T, d_c) rows by each batch row's latent; a broadcast matmul,
    # q_latent @ c[:, None].transpose(-2, -1), would copy the latent once per head inside torch.
    q_latent = torch.einsum("bhtn,hcn->bhtc", q_nope, w_uk)  # (B, H, T, d_c)
    scores = torch.einsum("bhtc,bsc->bhts", q_latent, c)  # (B, H, T, S)
    scores = scores + torch.einsum("bhtr,bsr->bhts", q_rope, k_rope)  # the shared RoPE key, every head
    scores = scores / math.sqrt(d_nope + d_rope)  # the width of the key each head sees
    visible = torch.ones(T, S, dtype=torch.bool).tril(s_past)  # query i sees 0 .. s_past + i
    probs = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)

    # Absorb w_uv too: sum_j p_j (c_j @ w_uv[h]) = (sum_j p_j c_j) @ w_uv[h].
    o_latent = torch.einsum("bhts,bsc->bhtc", probs, c)  # (B, H, T, d_c)
    o = torch.einsum("bhtc,hcv->bhtv", o_latent, w_uv)  # (B, H, T, d_v)
    y = o.transpose(1, 2).reshape(B, T, -1) @ weights["w_o"]  # heads in order: (B, T, H * d_v) @ w_o
    return y, {"c": c, "k_rope": k_rope}
