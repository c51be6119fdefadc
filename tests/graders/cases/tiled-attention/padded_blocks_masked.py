# Correct: pads k and v to a whole number of blocks and masks the padding; one batched loop.
# expect: passed
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    B, H, Tq, hd = q.shape
    Tk = k.shape[2]
    pad = (-Tk) % block_size
    kp = torch.nn.functional.pad(k, (0, 0, 0, pad))
    vp = torch.nn.functional.pad(v, (0, 0, 0, pad))
    m = q.new_full((B, H, Tq, 1), -math.inf)
    den = q.new_zeros((B, H, Tq, 1))
    acc = q.new_zeros((B, H, Tq, hd))
    qpos = torch.arange(Tk - Tq, Tk).view(Tq, 1)
    for j in range(0, Tk + pad, block_size):
        kb, vb = kp[:, :, j : j + block_size], vp[:, :, j : j + block_size]
        s = torch.einsum("bhqd,bhkd->bhqk", q, kb) / math.sqrt(hd)
        kpos = torch.arange(j, j + block_size).view(1, -1)
        hide = kpos >= Tk
        if causal:
            hide = hide | (kpos > qpos)
        s = s.masked_fill(hide, -math.inf)
        new_m = torch.maximum(m, s.amax(-1, keepdim=True))
        finite_m = new_m.masked_fill(new_m == -math.inf, 0)
        p = (s - finite_m).exp()
        alpha = (m - finite_m).exp()
        den = den * alpha + p.sum(-1, keepdim=True)
        acc = acc * alpha + p @ vb
        m = new_m
    return acc / den


def merge_attention(o1, lse1, o2, lse2):
    m = torch.maximum(lse1, lse2)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    a, b = torch.exp(lse1 - m), torch.exp(lse2 - m)
    total = a + b
    lse = torch.log(total) + m
    return (a[..., None] * o1 + b[..., None] * o2) / total[..., None], lse
