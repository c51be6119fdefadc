# Every chunk and every decode step starts at position 0.
# expect: failed
# diagnosis: positions restart at 0 in every call
import math

import torch
import torch.nn.functional as F


def apply_rope(x, positions, base=10000.0):
    """Rotate x (B, H, T, hd) at integer positions (T,) or (B, T); half-split pairs (i, i + hd/2)."""
    hd = x.shape[-1]
    half = hd // 2
    theta = base ** (-2 * torch.arange(half, dtype=torch.float32) / hd)  # (hd/2,)
    angles = positions.to(torch.float32)[..., None] * theta  # (T, hd/2) or (B, T, hd/2)
    if positions.dim() == 2:
        angles = angles[:, None]  # (B, 1, T, hd/2): the same angles for every head
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., :half], x[..., half:]  # each (B, H, T, hd/2)
    # Each pair (x1[i], x2[i]) turns by its own angle p * theta_i.
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # (B, H, T, hd)


def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=10000.0):
    """Causal self-attention with RoPE over the next T tokens of x (B, T, d), continuing a cache.

    Returns y (B, T, d) and {"k": rotated keys, "v": values}, each (B, n_heads, S_past + T, hd).
    """
    B, T, d = x.shape
    hd = d // n_heads
    s_past = cache["k"].shape[2] if cache else 0  # None and {} both mean "nothing cached"

    q, k, v = (x @ w_qkv).split(d, dim=-1)  # each (B, T, d)
    q = q.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)
    k = k.view(B, T, n_heads, hd).transpose(1, 2)
    v = v.view(B, T, n_heads, hd).transpose(1, 2)

    # The new tokens continue where the cache stops; values are never rotated.
    positions = torch.arange(T)  # restarts at 0
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)

    # The cached keys are already rotated: append the new ones, never rotate the old again.
    if cache:
        k = torch.cat([cache["k"], k], dim=2)  # (B, n_heads, S, hd)
        v = torch.cat([cache["v"], v], dim=2)
    S = s_past + T

    att = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, n_heads, T, S)
    # New query i sits at position s_past + i: it sees keys 0 .. s_past + i (bottom-right mask).
    visible = torch.ones(T, S, dtype=torch.bool).tril(s_past)  # (T, S)
    att = F.softmax(att.masked_fill(~visible, float("-inf")), dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, d)  # (B, T, d)
    return y @ w_o, {"k": k, "v": v}
