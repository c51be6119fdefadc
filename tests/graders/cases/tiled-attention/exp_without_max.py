# exp of raw scores: right for small scores, inf for huge ones.
# expect: failed
# diagnosis: NaN or inf for large scores
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    """softmax(q k^T / sqrt(hd)) v, one block of keys at a time (online softmax).

    q (B, H, Tq, hd), k and v (B, H, Tk, hd) -> (B, H, Tq, hd). Never holds more than
    Tq x block_size scores per (batch, head).
    """
    Tq, hd = q.shape[-2:]
    Tk = k.shape[-2]
    scale = 1.0 / math.sqrt(hd)

    m = torch.full(q.shape[:-1], float("-inf"))  # (B, H, Tq) running maximum
    l = torch.zeros(q.shape[:-1])  # (B, H, Tq) running sum of exp(score - m)
    o = torch.zeros_like(q)  # (B, H, Tq, hd) running sum of exp(score - m) * v
    query_pos = torch.arange(Tk - Tq, Tk)[:, None]  # (Tq, 1): query i sits at Tk - Tq + i

    for start in range(0, Tk, block_size):
        stop = min(start + block_size, Tk)  # the last block may be shorter
        s = q @ k[..., start:stop, :].transpose(-2, -1) * scale  # (B, H, Tq, n)
        if causal:
            future = torch.arange(start, stop)[None, :] > query_pos  # (Tq, n)
            s = s.masked_fill(future, float("-inf"))

        m_new = torch.maximum(m, s.amax(dim=-1))  # (B, H, Tq)
        # Rows that have seen no key yet still have m_new = -inf: subtract 0 there,
        # so exp(-inf - 0) = 0 instead of exp(-inf + inf) = NaN.
        safe = torch.zeros_like(m_new)  # exp of the raw scores
        p = torch.exp(s - safe[..., None])  # (B, H, Tq, n), every entry <= 1: no overflow
        correction = torch.ones_like(m)
        l = l * correction + p.sum(dim=-1)
        o = o * correction[..., None] + p @ v[..., start:stop, :]  # (B, H, Tq, hd)
        m = m_new

    return o / l[..., None]


def merge_attention(o1, lse1, o2, lse2):
    """Merge two partial attentions over disjoint keys: o (B, H, Tq, hd), lse (B, H, Tq)."""
    lse = torch.logaddexp(lse1, lse2)  # log(exp(lse1) + exp(lse2)), without overflow
    safe = torch.where(lse == float("-inf"), 0.0, lse)  # both parts empty: avoid -inf - -inf
    w1 = torch.exp(lse1 - safe)[..., None]  # (B, H, Tq, 1), this part's share; 0 when lse1 = -inf
    w2 = torch.exp(lse2 - safe)[..., None]
    return w1 * o1 + w2 * o2, lse
