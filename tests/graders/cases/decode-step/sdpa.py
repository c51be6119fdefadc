# expect: passed
# The fused kernel, with no mask: the one new query may see every cached key.
import torch
import torch.nn.functional as F


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, 1, n_heads, -1).transpose(1, 2) for t in (q, k, v))
    if "k" in cache:
        k = torch.cat((cache["k"], k), dim=-2)
        v = torch.cat((cache["v"], v), dim=-2)
    cache.update(k=k, v=v)
    y = F.scaled_dot_product_attention(q, k, v)
    return y.transpose(1, 2).reshape(B, 1, d) @ w_o
