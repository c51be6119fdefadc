# A bitwise ~ on an int64 mask is not a logical not: every column looks padded... or real.
# expect: failed
import math

import torch
import torch.nn.functional as F


def apply_rope(x, positions, base=10000.0):
    """Rotate x (B, H, T, hd) at positions (T,) or (B, T); half-split pairs (i, i + hd/2)."""
    hd = x.shape[-1]
    half = hd // 2
    theta = base ** (-2 * torch.arange(half, dtype=torch.float32) / hd)  # (hd/2,)
    angles = positions.to(torch.float32)[..., None] * theta  # (T, hd/2) or (B, T, hd/2)
    if positions.dim() == 2:
        angles = angles[:, None]  # (B, 1, T, hd/2)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # (B, H, T, hd)


def padded_attention(x, w_qkv, w_o, n_heads, attention_mask, cache=None, base=10000.0):
    """RoPE causal self-attention over a left-padded batch, continuing a cache.

    x (B, T, d): the next T columns; attention_mask (B, S_past + T), 1 = real token.
    Returns y (B, T, d) and {"k", "v"} of every slot, (B, n_heads, S_past + T, hd).
    """
    B, T, d = x.shape
    hd = d // n_heads
    real = ~(~attention_mask).bool()  # bitwise not on int64: ~1 == -2, ~0 == -1, both true
    S = real.shape[1]
    s_past = S - T

    q, k, v = (x @ w_qkv).split(d, dim=-1)  # each (B, T, d)
    q = q.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)
    k = k.view(B, T, n_heads, hd).transpose(1, 2)
    v = v.view(B, T, n_heads, hd).transpose(1, 2)

    # A real token's position counts only the real tokens before it in its row.
    positions = (real.long().cumsum(-1) - 1).clamp(min=0)[:, s_past:]  # (B, T)
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)
    if cache:
        k = torch.cat([cache["k"], k], dim=2)  # (B, n_heads, S, hd)
        v = torch.cat([cache["v"], v], dim=2)

    # Query i (column s_past + i) sees real keys at columns 0 .. s_past + i, in prefill and decode.
    causal = torch.ones(T, S, dtype=torch.bool).tril(s_past)  # (T, S)
    visible = causal[None, None] & real[:, None, None, :]  # (B, 1, T, S)
    att = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, n_heads, T, S)
    att = F.softmax(att.masked_fill(~visible, float("-inf")), dim=-1)
    # A padding query sees no real key: its row is all -inf and softmax made it NaN. Zero it.
    att = att.nan_to_num(0.0)
    y = (att @ v).transpose(1, 2).reshape(B, T, d)  # (B, T, d)
    return y @ w_o, {"k": k, "v": v}
