"""Causal multi-head self-attention, the layout every attention challenge shares.

    q, k, v = (x @ w_qkv).split(d, dim=-1)      each (B, T, d)
    view as (B, T, n_heads, hd), move to (B, n_heads, T, hd)
    scores = q @ k^T / sqrt(hd), causally masked, softmaxed over keys, @ v
    merge back to (B, T, d) in head order, @ w_o

Two paths compute the same thing: `attend` spells every step out, `attend_fused`
hands the work to torch's scaled_dot_product_attention. tests/graders/reference/
checks them against each other.

The queries may be fewer than the keys (a decode step, chunked prefill on top of
a cache): with S keys and T queries, query i sits at position S - T + i and sees
keys 0..S - T + i, so the mask is `tril(S - T)`, aligned bottom-right.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def head_size(d: int, n_heads: int, heads_name: str = "n_heads") -> int:
    """d // n_heads, refusing a width the heads do not divide."""
    if n_heads <= 0 or d % n_heads != 0:
        raise ValueError(f"d={d} is not a multiple of {heads_name}={n_heads}")
    return d // n_heads


def split_heads(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, n_heads * hd) -> (B, n_heads, T, hd); head h owns columns h*hd:(h+1)*hd."""
    B, T, C = t.shape
    hd = head_size(C, n_heads)
    return t.view(B, T, n_heads, hd).transpose(1, 2)  # (B, n_heads, T, hd)


def merge_heads(y: torch.Tensor) -> torch.Tensor:
    """(B, n_heads, T, hd) -> (B, T, n_heads * hd), heads side by side in order."""
    B, n_heads, T, hd = y.shape
    return y.transpose(1, 2).reshape(B, T, n_heads * hd)  # (B, T, d)


def project_qkv(
    x: torch.Tensor, w_qkv: torch.Tensor, n_heads: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (B, T, d) -> q, k, v, each (B, n_heads, T, hd)."""
    B, T, d = x.shape
    if w_qkv.shape != (d, 3 * d):
        raise ValueError(f"w_qkv has shape {tuple(w_qkv.shape)}, expected ({d}, {3 * d})")
    q, k, v = (x @ w_qkv).split(d, dim=-1)  # each (B, T, d)
    return split_heads(q, n_heads), split_heads(k, n_heads), split_heads(v, n_heads)


def causal_mask(T: int, S: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(T, S) bool, True where query i (at position S - T + i) may see key j."""
    if T > S:
        raise ValueError(f"T={T} queries cannot follow only S={S} keys")
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(S - T)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The explicit path. q (B, H, T, hd), k and v (B, H, S, hd) -> (B, H, T, hd)."""
    T, hd = q.shape[-2:]
    S = k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, H, T, S)
    scores = scores.masked_fill(~causal_mask(T, S, q.device), float("-inf"))
    weights = F.softmax(scores, dim=-1)  # each row sums to 1 over the visible keys
    return weights @ v  # (B, H, T, hd)


def attend_fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The fused path, same contract as `attend`.

    `is_causal=True` aligns the mask top-left (query i sees keys 0..i), which is
    only right when T == S; with a cache in front the bottom-right mask is passed,
    except for one query (a decode step), which sees every key and needs no mask.
    """
    T, S = q.shape[-2], k.shape[-2]
    if T == S:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if T == 1:
        return F.scaled_dot_product_attention(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(T, S, q.device))


def causal_self_attention(
    x: torch.Tensor, w_qkv: torch.Tensor, w_o: torch.Tensor, n_heads: int, *, fused: bool = False
) -> torch.Tensor:
    """x (B, T, d), w_qkv (d, 3d), w_o (d, d) -> (B, T, d)."""
    q, k, v = project_qkv(x, w_qkv, n_heads)  # each (B, n_heads, T, hd)
    y = (attend_fused if fused else attend)(q, k, v)  # (B, n_heads, T, hd)
    return merge_heads(y) @ w_o  # (B, T, d)
