# expect: passed
# One head at a time, with column slices of the weights, then concatenated in head order.
import math

import torch


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    hd = d // n_heads
    w_q, w_k, w_v = w_qkv[:, :d], w_qkv[:, d : 2 * d], w_qkv[:, 2 * d :]
    allowed = torch.tril(torch.ones(T, T)).bool()
    outputs = []
    for h in range(n_heads):
        cols = slice(h * hd, (h + 1) * hd)
        q, k, v = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]  # each (B, T, hd)
        att = q @ k.transpose(1, 2) / math.sqrt(hd)
        att = att.masked_fill(~allowed, -1e30).softmax(-1)
        outputs.append(att @ v)
    return torch.cat(outputs, dim=-1) @ w_o
