"""Rotary position embeddings (RoPE) and causal attention that continues from a cache.

RoPE (Su et al., "RoFormer", arXiv:2104.09864) rotates each pair of a query's or key's
components by an angle proportional to the token's position, so that q_m . k_n depends
only on m - n. The pairing here is the *half-split* one of GPT-NeoX and of Llama in
Hugging Face transformers: component i pairs with component i + hd/2, and with
theta_i = base ** (-2i / hd), at position p,

    out[i]        = x[i] cos(p theta_i) - x[i + hd/2] sin(p theta_i)
    out[i + hd/2] = x[i + hd/2] cos(p theta_i) + x[i] sin(p theta_i)

Three formulations are kept and tested against each other: `apply_rope` (vectorised,
rotate_half style), `apply_rope_explicit` (one pair at a time, as the formula reads) and
`apply_rope_complex` (each pair as the complex number x[i] + j x[i + hd/2] times
exp(j p theta_i), the RoFormer paper's view).

`rope_attention` is the attention layer of the shared layout with RoPE on q and k after
the head split (values are never rotated). With S_past tokens in the cache, the T new
tokens sit at positions S_past .. S_past + T - 1; the cache stores keys already rotated,
so a cached key is never rotated again.
"""

from __future__ import annotations

from typing import Any

import torch

from graders.reference.attention import attend, attend_fused, merge_heads, project_qkv


def rope_frequencies(hd: int, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """theta_i = base ** (-2i / hd) for i = 0 .. hd/2 - 1, shape (hd/2,)."""
    if hd % 2 != 0:
        raise ValueError(f"RoPE needs an even head size, got hd={hd}")
    i = torch.arange(hd // 2, dtype=dtype)
    return base ** (-2 * i / hd)  # (hd/2,)


def rope_angles(positions: torch.Tensor, hd: int, base: float, dtype: torch.dtype) -> torch.Tensor:
    """positions (T,) or (B, T) integers -> angles p * theta_i, (T, hd/2) or (B, 1, T, hd/2).

    The (B, T) form gets a heads axis so it broadcasts over x (B, H, T, hd/2).
    """
    theta = rope_frequencies(hd, base, dtype)  # (hd/2,)
    angles = positions.to(dtype)[..., None] * theta  # (T, hd/2) or (B, T, hd/2)
    return angles if positions.dim() == 1 else angles[:, None]  # (B, 1, T, hd/2)


def _check(x: torch.Tensor, positions: torch.Tensor) -> None:
    B, H, T, hd = x.shape
    if positions.shape not in ((T,), (B, T)):
        raise ValueError(f"positions has shape {tuple(positions.shape)}, expected ({T},) or ({B}, {T})")


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """x (B, H, T, hd) rotated at positions (T,) or (B, T); same shape. Vectorised (rotate_half)."""
    _check(x, positions)
    hd = x.shape[-1]
    angles = rope_angles(positions, hd, base, x.dtype)  # (T, hd/2) or (B, 1, T, hd/2)
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1)  # (..., T, hd)
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1)  # (..., T, hd)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]  # each (B, H, T, hd/2)
    rotated_half = torch.cat([-x2, x1], dim=-1)  # (B, H, T, hd)
    return x * cos + rotated_half * sin


def apply_rope_explicit(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """The formula of the module docstring, one pair (i, i + hd/2) at a time."""
    _check(x, positions)
    hd = x.shape[-1]
    half = hd // 2
    angles = rope_angles(positions, hd, base, x.dtype)  # (T, hd/2) or (B, 1, T, hd/2)
    out = torch.empty_like(x)  # (B, H, T, hd)
    for i in range(half):
        c, s = angles[..., i].cos(), angles[..., i].sin()  # (T,) or (B, 1, T)
        a, b = x[..., i], x[..., i + half]  # each (B, H, T)
        out[..., i] = a * c - b * s
        out[..., i + half] = b * c + a * s
    return out


def apply_rope_complex(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Each pair as the complex number x[i] + j x[i + hd/2], multiplied by exp(j p theta_i)."""
    _check(x, positions)
    hd = x.shape[-1]
    angles = rope_angles(positions, hd, base, torch.float64)  # (T, hd/2) or (B, 1, T, hd/2)
    z = torch.complex(x[..., : hd // 2].double(), x[..., hd // 2 :].double())  # (B, H, T, hd/2)
    z = z * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)  # (B, H, T, hd)


def cache_length(cache: dict[str, Any] | None) -> int:
    """S_past: the tokens already in a cache (0 for None or an empty dict)."""
    return 0 if not cache else int(cache["k"].shape[-2])


def rope_attention(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    cache: dict[str, Any] | None = None,
    base: float = 10000.0,
    *,
    fused: bool = False,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """x (B, T, d), the next T tokens -> y (B, T, d) and the cache {"k" (rotated), "v"} of S_past + T."""
    B, T, d = x.shape
    s_past = cache_length(cache)
    q, k, v = project_qkv(x, w_qkv, n_heads)  # each (B, n_heads, T, hd)
    positions = torch.arange(s_past, s_past + T)  # (T,)
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)
    if cache:
        k = torch.cat([cache["k"], k], dim=-2)  # (B, n_heads, S_past + T, hd)
        v = torch.cat([cache["v"], v], dim=-2)  # (B, n_heads, S_past + T, hd)
    y = (attend_fused if fused else attend)(q, k, v)  # (B, n_heads, T, hd), query i sees 0..S_past+i
    return merge_heads(y) @ w_o, {"k": k, "v": v}  # (B, T, d)
