# expect: failed
# diagnosis: the mask is applied after the softmax
# diagnosis: the heads are merged without transposing back to (B, T, n_heads, hd)
# The starter with only the scale fixed.
import math

import torch
import torch.nn.functional as F


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q = q.view(B, T, n_heads, hd).transpose(1, 2)
    k = k.view(B, T, n_heads, hd).transpose(1, 2)
    v = v.view(B, T, n_heads, hd).transpose(1, 2)
    att = q @ k.transpose(-2, -1) / math.sqrt(hd)
    att = F.softmax(att, dim=-1)
    att = att.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), 0.0)
    y = att @ v
    y = y.reshape(B, T, d)
    return y @ w_o
