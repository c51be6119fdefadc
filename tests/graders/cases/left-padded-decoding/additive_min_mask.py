# Correct, Hugging Face style: an additive mask of finfo.min (never -inf), so no row can turn into NaN.
# expect: passed
import math

import torch


def apply_rope(x, positions, base=10000.0):
    hd = x.shape[-1]
    theta = base ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    a = positions.float()[:, None, :, None] * theta
    cos, sin = torch.cat([a.cos(), a.cos()], -1), torch.cat([a.sin(), a.sin()], -1)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def padded_attention(x, w_qkv, w_o, n_heads, attention_mask, cache=None, base=10000.0):
    B, T, d = x.shape
    hd = d // n_heads
    S = attention_mask.shape[-1]
    q, k, v = (x @ w_qkv).view(B, T, 3, n_heads, hd).permute(2, 0, 3, 1, 4)
    positions = torch.clamp(torch.cumsum(attention_mask.long(), -1) - 1, min=0)[:, S - T :]
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)
    if cache is not None and len(cache) > 0:
        k = torch.cat((cache["k"], k), dim=-2)
        v = torch.cat((cache["v"], v), dim=-2)
    future = torch.arange(S)[None, :] > torch.arange(S - T, S)[:, None]  # (T, S)
    hidden = future[None, None] | (attention_mask[:, None, None, :] == 0)
    bias = torch.zeros(hidden.shape).masked_fill(hidden, torch.finfo(torch.float32).min)
    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + bias, dim=-1)
    w = w * (~hidden).any(-1, keepdim=True)  # padding queries: whatever, but finite; zero them
    return (w @ v).transpose(1, 2).reshape(B, T, d) @ w_o, {"k": k, "v": v}
