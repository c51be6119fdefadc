# expect: passed
# Heads as an einsum axis; the mask as an additive -inf bias.
import torch


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).view(B, T, 3, n_heads, hd).unbind(2)  # each (B, T, h, hd)
    scores = torch.einsum("bihd,bjhd->bhij", q, k) * hd**-0.5
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = scores + torch.zeros(T, T).masked_fill(future, float("-inf"))
    weights = scores.softmax(dim=-1)
    y = torch.einsum("bhij,bjhd->bihd", weights, v)  # (B, T, h, hd)
    return y.reshape(B, T, d) @ w_o
