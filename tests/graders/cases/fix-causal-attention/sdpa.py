# expect: passed
# The fused kernel does the scaling, masking and softmax.
import torch.nn.functional as F


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, T, n_heads, d // n_heads).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(B, T, d) @ w_o
