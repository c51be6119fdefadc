# Right numbers, but every block's partial output is kept and stacked: n_blocks x Tq x hd at once.
# expect: failed
# diagnosis: builds a tensor bigger than a block of scores
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    Tq, hd = q.shape[-2:]
    Tk = k.shape[-2]
    outs, lses = [], []
    for start in range(0, Tk, block_size):
        s = q @ k[..., start : start + block_size, :].transpose(-2, -1) / math.sqrt(hd)
        if causal:
            keys = torch.arange(start, min(start + block_size, Tk))
            s = s.masked_fill(keys[None, :] > torch.arange(Tk - Tq, Tk)[:, None], float("-inf"))
        lse = torch.logsumexp(s, -1)
        safe = torch.where(torch.isinf(lse), 0.0, lse)
        outs.append(torch.exp(s - safe[..., None]) @ v[..., start : start + block_size, :])
        lses.append(lse)
    lse_all = torch.stack(lses)  # (n_blocks, B, H, Tq)
    weights = torch.softmax(lse_all, dim=0)[..., None]  # each block's share of the row's exp-sum
    return (torch.stack(outs) * weights).sum(0)  # the stack: (n_blocks, B, H, Tq, hd)


def merge_attention(o1, lse1, o2, lse2):
    lse = torch.logaddexp(lse1, lse2)
    safe = torch.where(torch.isinf(lse), 0.0, lse)
    return torch.exp(lse1 - safe)[..., None] * o1 + torch.exp(lse2 - safe)[..., None] * o2, lse
