# Correct: each half-split pair as a complex number times exp(i p theta); einsum attention; extra cache keys.
# expect: passed
import math

import torch


def apply_rope(x, positions, base=10000.0):
    hd = x.shape[-1]
    theta = base ** (-2.0 * torch.arange(hd // 2, dtype=torch.float64) / hd)
    angles = positions.double()[..., None] * theta
    if positions.dim() == 2:
        angles = angles[:, None]
    rot = torch.polar(torch.ones_like(angles), angles)
    z = torch.complex(x[..., : hd // 2].double(), x[..., hd // 2 :].double()) * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=10000.0):
    B, T, d = x.shape
    hd = d // n_heads
    start = cache["k"].shape[2] if cache and "k" in cache else 0
    q, k, v = (x @ w_qkv).view(B, T, 3, n_heads, hd).permute(2, 0, 3, 1, 4)
    positions = torch.arange(start, start + T)
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)
    if start:
        k = torch.cat([cache["k"], k], 2)
        v = torch.cat([cache["v"], v], 2)
    scores = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(hd)
    future = torch.arange(start + T)[None, :] > (start + torch.arange(T))[:, None]
    weights = scores.masked_fill(future, float("-inf")).softmax(-1)
    y = torch.einsum("bhts,bhsd->bthd", weights, v).reshape(B, T, d)
    return y @ w_o, {"k": k, "v": v, "length": start + T}
