"""One decode step of causal self-attention over a KV cache, and the loop around it.

The cache is a plain dict: before the first step it is empty; after each step
`cache["k"]` and `cache["v"]` hold the raw key and value projections of every token
seen so far, `(B, n_heads, t, hd)`, concatenated on dim=-2 (the transformers
cache_utils layout). Other keys in the dict are left alone.

A step projects only the new token, appends its key and value, and lets its one
query attend over everything cached. That query is the newest position, so every
cached key is in its past: a decode step needs no mask.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from graders.reference.attention import merge_heads, project_qkv


def step(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    cache: dict[str, Any],
    *,
    fused: bool = False,
) -> torch.Tensor:
    """x (B, 1, d) -> (B, 1, d): row t-1 of the full forward pass over the t tokens seen."""
    B, T, d = x.shape
    if T != 1:
        raise ValueError(f"a decode step takes T=1 token, got T={T}")
    q, k, v = project_qkv(x, w_qkv, n_heads)  # each (B, n_heads, 1, hd)
    if "k" in cache:
        k = torch.cat([cache["k"], k], dim=-2)  # (B, n_heads, t, hd)
        v = torch.cat([cache["v"], v], dim=-2)  # (B, n_heads, t, hd)
    cache["k"], cache["v"] = k, v
    if fused:
        y = F.scaled_dot_product_attention(q, k, v)  # (B, n_heads, 1, hd)
    else:
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, n_heads, 1, t)
        y = F.softmax(scores, dim=-1) @ v  # (B, n_heads, 1, hd)
    return merge_heads(y) @ w_o  # (B, 1, d)


def prefill_cache(x: torch.Tensor, w_qkv: torch.Tensor, n_heads: int) -> dict[str, Any]:
    """The cache `step` would hold after the tokens of x (B, t, d): k and v (B, n_heads, t, hd)."""
    _, k, v = project_qkv(x, w_qkv, n_heads)
    return {"k": k, "v": v}


def decode_sequence(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    cache: dict[str, Any] | None = None,
    *,
    fused: bool = False,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """Feed x (B, T, d) one token at a time; returns the outputs (B, T, d) and the cache."""
    cache = {} if cache is None else cache
    ys = [step(x[:, i : i + 1], w_qkv, w_o, n_heads, cache, fused=fused) for i in range(x.shape[1])]
    return torch.cat(ys, dim=1), cache  # (B, T, d)
