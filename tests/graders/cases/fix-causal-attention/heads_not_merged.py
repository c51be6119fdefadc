# expect: failed
# diagnosis: output has shape
# Returns the per-head outputs (B, n_heads, T, hd) without merging or projecting them.
import torch.nn.functional as F


def causal_self_attention(x, w_qkv, w_o, n_heads):
    B, T, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=-1)
    q, k, v = (t.view(B, T, n_heads, d // n_heads).transpose(1, 2) for t in (q, k, v))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
