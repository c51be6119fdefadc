# expect: passed
# Correct but wasteful: packs the batch into one sequence, as packed training does, and keeps the rows
# apart with a dense block-diagonal mask instead of a varlen kernel. Every query is scored against
# every row's keys, so attention costs B times the reference's multiply-adds; the cost report shows
# the ratio on a decode step (tests/graders/checks/test_cost_report.py).
import math

import torch


def apply_rope(x, positions, base):
    """x (B, H, T, hd) rotated at positions (B, T); half-split pairs (i, i + hd/2)."""
    hd = x.shape[-1]
    half = hd // 2
    theta = base ** (-2 * torch.arange(half, dtype=torch.float32) / hd)  # (hd/2,)
    angles = (positions.to(torch.float32)[..., None] * theta)[:, None]  # (B, 1, T, hd/2)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def padded_attention(x, w_qkv, w_o, n_heads, attention_mask, cache=None, base=10000.0):
    B, T, d = x.shape
    hd = d // n_heads
    real = attention_mask.bool()  # (B, S)
    S = real.shape[1]
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, T, n_heads, hd).transpose(1, 2) for t in (q, k, v))  # (B, n_heads, T, hd)
    positions = (real.long().cumsum(-1) - 1).clamp(min=0)[:, S - T :]  # (B, T)
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)
    if cache:
        k = torch.cat([cache["k"], k], dim=2)  # (B, n_heads, S, hd)
        v = torch.cat([cache["v"], v], dim=2)

    # One packed sequence per head: row b's queries, then row b + 1's, and the same for keys.
    q_packed = q.transpose(0, 1).reshape(n_heads, B * T, hd)
    k_packed = k.transpose(0, 1).reshape(n_heads, B * S, hd)
    v_packed = v.transpose(0, 1).reshape(n_heads, B * S, hd)
    # Query (b, i) sees key (c, j) when c == b, j is a real column and j <= S - T + i.
    same_row = torch.eye(B, dtype=torch.bool)[:, None, :, None]  # (B, 1, B, 1)
    causal = torch.ones(T, S, dtype=torch.bool).tril(S - T)[None, :, None, :]  # (1, T, 1, S)
    visible = (same_row & causal & real[None, None]).reshape(B * T, B * S)
    scores = q_packed @ k_packed.transpose(-2, -1) / math.sqrt(hd)  # (n_heads, B*T, B*S)
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    weights = weights.nan_to_num(0.0)  # a padding query sees no key: its NaN row becomes zeros
    y = (weights @ v_packed).view(n_heads, B, T, hd).permute(1, 2, 0, 3).reshape(B, T, d)
    return y @ w_o, {"k": k, "v": v}
