"""Grouped-query attention with a KV cache: n_q query heads share n_kv key-value heads.

MHA is n_kv == n_q, MQA is n_kv == 1. Query head i reads kv head i // (n_q // n_kv),
so each kv head serves a contiguous group of query heads. The cache keeps the n_kv
heads *before* they are repeated: that is the whole memory saving.

Weights (state dict keys q.weight, kv.weight, o.weight, no biases):
    q  = Linear(d, d)               -> view (B, T, n_q, hd)
    kv = Linear(d, 2 * n_kv * hd)   -> view (B, T, 2, n_kv, hd), keys first
    o  = Linear(d, d)
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from graders.reference.attention import attend, causal_mask, head_size, merge_heads

KVCache = tuple[torch.Tensor, torch.Tensor]


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, n_kv, S, hd) -> (B, n_kv * n_rep, S, hd); kv head j becomes heads j*n_rep .. (j+1)*n_rep - 1."""
    if n_rep == 1:
        return x
    return x.repeat_interleave(n_rep, dim=1)  # (B, n_kv * n_rep, S, hd)


def group_size(n_q: int, n_kv: int) -> int:
    """How many query heads share one kv head."""
    if n_kv <= 0 or n_q % n_kv != 0:
        raise ValueError(f"n_q={n_q} is not a multiple of n_kv={n_kv}")
    return n_q // n_kv


class GQA(nn.Module):
    def __init__(self, d: int, n_q: int, n_kv: int) -> None:
        super().__init__()
        self.n_rep = group_size(n_q, n_kv)
        self.hd = head_size(d, n_q, "n_q")
        self.n_q, self.n_kv = n_q, n_kv
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, *, fused: bool = False
    ) -> tuple[torch.Tensor, KVCache]:
        """x (B, T, d), cache (k, v) each (B, n_kv, P, hd) -> y (B, T, d), cache with S = P + T."""
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.n_q, self.hd).transpose(1, 2)  # (B, n_q, T, hd)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)  # each (B, T, n_kv, hd)
        k, v = k.transpose(1, 2), v.transpose(1, 2)  # each (B, n_kv, T, hd)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=-2)  # (B, n_kv, S, hd)
            v = torch.cat([cache[1], v], dim=-2)  # (B, n_kv, S, hd)
        if fused:
            S = k.shape[-2]
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=causal_mask(T, S, x.device), enable_gqa=True
            )  # (B, n_q, T, hd)
        else:
            y = attend(q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep))  # (B, n_q, T, hd)
        return self.o(merge_heads(y)), (k, v)  # (B, T, d); the cache keeps n_kv heads
