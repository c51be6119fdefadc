# expect: passed
# Correct but wasteful: the worked solution with a prefill's additive float mask, built whole as
# (S, S) and sliced to the new rows. The cost report shows its largest tensor at 2x the reference's
# (the repeated cache) on a 512-position call (tests/graders/checks/test_cost_report.py).
"""One Llama decoder layer: pre-norm RMSNorm, GQA with RoPE over a cache, SwiGLU, two residuals."""

import math

import torch
import torch.nn.functional as F


def rmsnorm(x, w, eps):
    """x (..., d) divided by its root mean square over d, eps inside the root, times w (d,)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def apply_rope(x, positions, base):
    """x (B, heads, T, hd) rotated at positions (T,): the half-split pairs (i, i + hd/2)."""
    hd = x.shape[-1]
    theta = base ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)  # (hd/2,)
    angles = positions.float()[:, None] * theta  # (T, hd/2)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def llama_block(x, weights, n_heads, n_kv_heads, cache=None, base=10000.0, eps=1e-5):
    """x (B, T, d): the next T tokens -> (y (B, T, d), {"k", "v"}: each (B, H_kv, S, hd))."""
    if n_kv_heads <= 0 or n_heads % n_kv_heads != 0:
        raise ValueError(f"n_heads={n_heads} is not a multiple of n_kv_heads={n_kv_heads}")
    B, T, _ = x.shape
    hd = weights["w_q"].shape[1] // n_heads  # need not be d // n_heads
    s_past = cache["k"].shape[2] if cache else 0
    positions = torch.arange(s_past, s_past + T)  # the new tokens continue after the cache

    z = rmsnorm(x, weights["attn_norm"], eps)  # pre-norm: the stream x itself is never normed
    q = (z @ weights["w_q"]).view(B, T, n_heads, hd).transpose(1, 2)  # (B, H, T, hd)
    k = (z @ weights["w_k"]).view(B, T, n_kv_heads, hd).transpose(1, 2)  # (B, H_kv, T, hd)
    v = (z @ weights["w_v"]).view(B, T, n_kv_heads, hd).transpose(1, 2)  # (B, H_kv, T, hd)
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)  # values never rotated
    if cache:  # the cache holds rotated keys: only the new ones were rotated
        k = torch.cat([cache["k"], k], dim=2)  # (B, H_kv, S, hd)
        v = torch.cat([cache["v"], v], dim=2)
    S = k.shape[2]

    # Query head i reads kv head i // (H // H_kv): repeat_interleave, only for the scores.
    group = n_heads // n_kv_heads
    k_rep, v_rep = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, H, S, hd)
    scores = q @ k_rep.transpose(-2, -1) / math.sqrt(hd)  # (B, H, T, S)
    mask = torch.full((S, S), float("-inf")).triu(1)[S - T :]  # (T, S) rows of an (S, S) float mask
    probs = torch.softmax(scores + mask, dim=-1)
    attn = (probs @ v_rep).transpose(1, 2).reshape(B, T, n_heads * hd) @ weights["w_o"]  # (B, T, d)
    h = x + attn  # the first residual

    m = rmsnorm(h, weights["mlp_norm"], eps)
    mlp = (F.silu(m @ weights["w_gate"]) * (m @ weights["w_up"])) @ weights["w_down"]  # SwiGLU
    return h + mlp, {"k": k, "v": v}  # the second residual; the cache keeps H_kv heads
