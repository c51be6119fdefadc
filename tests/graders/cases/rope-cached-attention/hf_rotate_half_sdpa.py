# Correct, Hugging Face style: inv_freq = 1 / base ** (arange(0, hd, 2) / hd), rotate_half, sdpa.
# expect: passed
import torch
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, positions, base=10000.0):
    hd = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = positions.float()[..., None] * inv_freq  # (..., T, hd/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (..., T, hd)
    if positions.dim() == 2:
        emb = emb.unsqueeze(1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=10000.0):
    B, T, d = x.shape
    past = 0 if not cache else cache["k"].size(-2)
    q, k, v = (t.unflatten(-1, (n_heads, -1)).transpose(1, 2) for t in (x @ w_qkv).chunk(3, dim=-1))
    pos = torch.arange(past, past + T)
    q, k = apply_rope(q, pos, base), apply_rope(k, pos, base)
    if past:
        k, v = torch.cat((cache["k"], k), -2), torch.cat((cache["v"], v), -2)
    mask = torch.ones(T, past + T, dtype=torch.bool).tril(past)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return y.transpose(1, 2).flatten(2) @ w_o, {"k": k, "v": v}
