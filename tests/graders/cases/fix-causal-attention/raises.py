# expect: failed
# diagnosis: your code raised RuntimeError
import torch


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q = q.view(B, n_heads, d // n_heads)  # wrong number of dimensions: raises
    return torch.zeros_like(x)
