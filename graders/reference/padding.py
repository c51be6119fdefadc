"""Causal RoPE attention over a left-padded batch, prefill and decode, with a cache.

Prompts of different lengths share a batch by padding each on the left up to the longest,
so every row's newest token sits in the last column and decoding appends one column of
ones to `attention_mask` (B, S) for the whole batch (Hugging Face transformers pads
decoder-only models on the left for generation for this reason). Three things make the
padding invisible:

- a real token's RoPE position is the number of real tokens before it in its row,
  `attention_mask.cumsum(-1) - 1`, not its column;
- no query attends to a padding key (padding columns are masked out of every row);
- a padding query has no real key at or before it: its row of scores would be all -inf
  and softmax would give NaN, so those rows are zeroed (any finite value is allowed).

`padded_attention` is the batched path; `padded_attention_by_rows` runs each row's real
tokens alone through `rope_attention` (batch 1, no padding), which is what the batched
path must equal at every real position.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from graders.reference.attention import merge_heads, project_qkv
from graders.reference.rope import apply_rope, cache_length, rope_attention


def real_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, S) mask -> (B, S) RoPE positions: real tokens counted from 0 in each row (padding: 0)."""
    mask = attention_mask.to(torch.long)
    return (mask.cumsum(-1) - 1).clamp(min=0)  # (B, S)


def visible_keys(attention_mask: torch.Tensor, T: int) -> torch.Tensor:
    """(B, S) mask -> (B, 1, T, S) bool: query i (column S - T + i) sees real keys at columns <= its own."""
    B, S = attention_mask.shape
    causal = torch.ones(T, S, dtype=torch.bool).tril(S - T)  # (T, S), bottom-right aligned
    real = attention_mask.to(torch.bool)[:, None, None, :]  # (B, 1, 1, S)
    return causal[None, None] & real  # (B, 1, T, S)


def padded_attention(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    attention_mask: torch.Tensor,
    cache: dict[str, Any] | None = None,
    base: float = 10000.0,
    *,
    fused: bool = False,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """x (B, T, d) -> y (B, T, d) and the cache of every slot, padding included, (B, n_heads, S, hd)."""
    B, T, d = x.shape
    S = cache_length(cache) + T
    if attention_mask.shape != (B, S):
        raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, expected ({B}, {S})")
    q, k, v = project_qkv(x, w_qkv, n_heads)  # each (B, n_heads, T, hd)
    positions = real_positions(attention_mask)[:, -T:]  # (B, T)
    q, k = apply_rope(q, positions, base), apply_rope(k, positions, base)
    if cache:
        k = torch.cat([cache["k"], k], dim=-2)  # (B, n_heads, S, hd)
        v = torch.cat([cache["v"], v], dim=-2)  # (B, n_heads, S, hd)
    visible = visible_keys(attention_mask, T)  # (B, 1, T, S)
    has_key = visible.any(-1, keepdim=True)  # (B, 1, T, 1): False for a padding query
    if fused:
        # A row with no visible key would be NaN: let it see everything, then zero it.
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=visible | ~has_key)
    else:
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, n_heads, T, S)
        scores = scores.masked_fill(~visible, float("-inf"))
        weights = F.softmax(scores.masked_fill(~has_key, 0.0), dim=-1)  # (B, n_heads, T, S)
        y = weights @ v  # (B, n_heads, T, hd)
    y = y.masked_fill(~has_key, 0.0)  # (B, n_heads, T, hd)
    return merge_heads(y) @ w_o, {"k": k, "v": v}  # (B, T, d)


def padded_attention_by_rows(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    attention_mask: torch.Tensor,
    base: float = 10000.0,
) -> torch.Tensor:
    """The explicit path over a whole padded batch x (B, S, d): each row's real tokens alone."""
    y = torch.zeros_like(x)  # (B, S, d); padding rows stay 0
    for b in range(x.shape[0]):
        real = attention_mask[b].to(torch.bool)  # (S,)
        if real.any():
            y_row, _ = rope_attention(x[b : b + 1, real], w_qkv, w_o, n_heads, base=base)  # (1, n_real, d)
            y[b, real] = y_row[0]
    return y
