# expect: failed
# diagnosis: there is no causal mask
import math

import torch.nn.functional as F


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, T, n_heads, hd).transpose(1, 2) for t in (q, k, v))
    att = q @ k.transpose(-2, -1) / math.sqrt(hd)
    y = F.softmax(att, dim=-1) @ v
    return y.transpose(1, 2).reshape(B, T, d) @ w_o
