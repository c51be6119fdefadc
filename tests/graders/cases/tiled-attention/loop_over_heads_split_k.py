# Correct: one (batch, head) at a time, each block a split-K part merged with merge_attention (NaN-safe).
# expect: passed
import math

import torch


def merge_attention(o1, lse1, o2, lse2):
    lse = torch.logaddexp(lse1, lse2)
    ref = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    w1 = torch.where(torch.isneginf(lse1), 0.0, torch.exp(lse1 - ref))
    w2 = torch.where(torch.isneginf(lse2), 0.0, torch.exp(lse2 - ref))
    return w1.unsqueeze(-1) * o1 + w2.unsqueeze(-1) * o2, lse


def tiled_attention(q, k, v, block_size, causal=False):
    B, H, Tq, hd = q.shape
    Tk = k.shape[-2]
    out = torch.empty_like(q)
    for b in range(B):
        for h in range(H):
            o = torch.zeros(Tq, hd)
            lse = torch.full((Tq,), float("-inf"))
            for start in range(0, Tk, block_size):
                kb, vb = k[b, h, start : start + block_size], v[b, h, start : start + block_size]
                s = q[b, h] @ kb.T / math.sqrt(hd)  # (Tq, n)
                if causal:
                    keys = torch.arange(start, start + kb.shape[0])
                    s = s.masked_fill(keys[None, :] > torch.arange(Tk - Tq, Tk)[:, None], float("-inf"))
                lse_b = torch.logsumexp(s, -1)
                p = torch.exp(s - torch.where(torch.isneginf(lse_b), 0.0, lse_b)[:, None])
                o, lse = merge_attention(o, lse, p @ vb, lse_b)
            out[b, h] = o
    return out
