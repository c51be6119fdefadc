# expect: failed
# diagnosis: the mask is applied after the softmax
# Only the first planted bug is left: future weights are zeroed after normalising.
import math

import torch


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, T, n_heads, hd).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1) / math.sqrt(hd)).softmax(dim=-1)
    att = att * torch.tril(torch.ones(T, T))
    y = att @ v
    return y.transpose(1, 2).reshape(B, T, d) @ w_o
