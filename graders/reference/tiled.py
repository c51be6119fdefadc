"""Attention in key blocks with an online softmax, and the merge of partial results (split-K).

FlashAttention (Dao et al., arXiv:2205.14135) never materialises the (Tq, Tk) score matrix:
it walks over blocks of keys and keeps, per query, a running maximum m, a running
denominator l = sum exp(s - m) and a running output o = sum exp(s - m) v. When a block
raises the maximum from m to m', everything accumulated so far is rescaled by
exp(m - m') before the block is added; at the end o / l is the softmax-weighted average
and m + log(l) is the log-sum-exp of the row's scores. Subtracting the maximum is what
keeps exp from overflowing for scores of any size.

Flash-Decoding splits the keys of one query across workers instead and merges their
partial results: with lse_j the log-sum-exp of part j's scores, the union's lse is
logaddexp(lse_1, lse_2) and its output is sum_j exp(lse_j - lse) o_j. A part that sees no
key has lse = -inf and weight 0.

`attention_with_lse` is the explicit path (the full score matrix, for reference only);
`tiled_attention` the blocked one; scaled_dot_product_attention the fused one.
With causal=True, query i sits at position Tk - Tq + i (bottom-right alignment).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def causal_visible(Tq: int, Tk: int, start: int = 0, stop: int | None = None) -> torch.Tensor:
    """(Tq, stop - start) bool: query i (position Tk - Tq + i) sees keys start..stop-1 at or before it."""
    stop = Tk if stop is None else stop
    query_pos = torch.arange(Tk - Tq, Tk)[:, None]  # (Tq, 1)
    key_pos = torch.arange(start, stop)[None, :]  # (1, n)
    return key_pos <= query_pos  # (Tq, n)


def attention_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """The explicit path: o (B, H, Tq, hd), lse (B, H, Tq); a row with no visible key: o = 0, lse = -inf."""
    Tq, hd = q.shape[-2:]
    Tk = k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, H, Tq, Tk)
    if causal:
        scores = scores.masked_fill(~causal_visible(Tq, Tk), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # (B, H, Tq)
    weights = torch.exp(scores - lse[..., None]).nan_to_num(0.0)  # (B, H, Tq, Tk); empty rows -> 0
    return weights @ v, lse  # (B, H, Tq, hd), (B, H, Tq)


def attention_fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """The fused path (scaled_dot_product_attention), bottom-right causal mask."""
    mask = causal_visible(q.shape[-2], k.shape[-2]) if causal else None
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def tiled_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int, causal: bool = False
) -> torch.Tensor:
    """softmax(q k^T / sqrt(hd)) v over key blocks of at most block_size; (B, H, Tq, hd)."""
    return tiled_attention_with_lse(q, k, v, block_size, causal)[0]


def tiled_attention_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """tiled_attention and the rows' log-sum-exp (B, H, Tq). Never holds more than Tq * block_size scores."""
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    Tq, hd = q.shape[-2:]
    Tk = k.shape[-2]
    if causal and Tq > Tk:
        raise ValueError(f"causal attention needs Tq <= Tk, got Tq={Tq}, Tk={Tk}")
    m = q.new_full(q.shape[:-1], float("-inf"))  # (B, H, Tq) running maximum
    l = q.new_zeros(q.shape[:-1])  # (B, H, Tq) running denominator  # noqa: E741
    o = torch.zeros_like(q)  # (B, H, Tq, hd) running (unnormalised) output
    for start in range(0, Tk, block_size):
        stop = min(start + block_size, Tk)  # the last block may be partial
        s = q @ k[..., start:stop, :].transpose(-2, -1) / math.sqrt(hd)  # (B, H, Tq, n)
        if causal:
            s = s.masked_fill(~causal_visible(Tq, Tk, start, stop), float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1))  # (B, H, Tq)
        # A row that has seen no key yet keeps m = -inf; subtract 0 there so exp gives 0, not NaN.
        shift = torch.where(torch.isinf(m_new), 0.0, m_new)  # (B, H, Tq)
        p = torch.exp(s - shift[..., None])  # (B, H, Tq, n)
        rescale = torch.exp(m - shift)  # (B, H, Tq): how much the old maximum overstated
        l = l * rescale + p.sum(dim=-1)  # noqa: E741
        o = o * rescale[..., None] + p @ v[..., start:stop, :]  # (B, H, Tq, hd)
        m = m_new
    out = torch.where(l[..., None] > 0, o / l.clamp(min=torch.finfo(l.dtype).tiny)[..., None], 0.0)
    return out, m + torch.log(l)  # lse = -inf where no key was visible


def merge_attention(
    o1: torch.Tensor, lse1: torch.Tensor, o2: torch.Tensor, lse2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two partials over disjoint keys, o (B, H, Tq, hd) and lse (B, H, Tq) -> the union's (o, lse)."""
    lse = torch.logaddexp(lse1, lse2)  # (B, H, Tq); -inf only when both parts are empty
    shift = torch.where(torch.isinf(lse), 0.0, lse)  # keep exp(-inf - -inf) from becoming NaN
    w1 = torch.exp(lse1 - shift)[..., None]  # (B, H, Tq, 1), 0 for an empty part
    w2 = torch.exp(lse2 - shift)[..., None]
    return w1 * o1 + w2 * o2, lse
