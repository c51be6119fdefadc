# Correct: scaled_dot_product_attention with a boolean mask; rows without a key see everything, then are zeroed.
# expect: passed
import torch
import torch.nn.functional as F


def rope(x, pos, base):
    hd = x.shape[-1]
    inv = 1.0 / base ** (torch.arange(0, hd, 2).float() / hd)
    ang = (pos.float()[..., None] * inv).unsqueeze(1)  # (B, 1, T, hd/2)
    ang = torch.cat([ang, ang], -1)
    x1, x2 = x.chunk(2, -1)
    return x * ang.cos() + torch.cat([-x2, x1], -1) * ang.sin()


def padded_attention(x, w_qkv, w_o, n_heads, attention_mask, cache=None, base=10000.0):
    B, T, d = x.shape
    m = attention_mask.to(torch.bool)
    S = m.size(1)
    q, k, v = (t.view(B, T, n_heads, -1).transpose(1, 2) for t in (x @ w_qkv).split(d, -1))
    pos = m.long().cumsum(1).sub(1).clamp_min(0)[:, -T:]
    q, k = rope(q, pos, base), rope(k, pos, base)
    if cache:
        k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
    allowed = torch.ones(T, S, dtype=torch.bool).tril(S - T) & m[:, None, None, :]
    any_key = allowed.any(-1, keepdim=True)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | ~any_key)
    y = torch.where(any_key, y, torch.zeros_like(y))
    return y.transpose(1, 2).reshape(B, T, d) @ w_o, {"k": k, "v": v}
