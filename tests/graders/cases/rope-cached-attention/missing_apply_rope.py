# rope_attention is right, but there is no apply_rope: the two apply_rope tests fail with the name.
# expect: failed
# diagnosis: your code has no top-level `apply_rope`
import math

import torch
import torch.nn.functional as F


def _rotate(x, positions, base):
    hd = x.shape[-1]
    theta = base ** (-2 * torch.arange(hd // 2, dtype=torch.float32) / hd)
    a = positions.float()[:, None] * theta
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return torch.cat([x1 * a.cos() - x2 * a.sin(), x2 * a.cos() + x1 * a.sin()], -1)


def rope_attention(x, w_qkv, w_o, n_heads, cache=None, base=10000.0):
    B, T, d = x.shape
    s = cache["k"].shape[2] if cache else 0
    q, k, v = ((t.view(B, T, n_heads, -1).transpose(1, 2)) for t in (x @ w_qkv).split(d, -1))
    pos = torch.arange(s, s + T)
    q, k = _rotate(q, pos, base), _rotate(k, pos, base)
    if cache:
        k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
    mask = torch.ones(T, s + T, dtype=torch.bool).tril(s)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return y.transpose(1, 2).reshape(B, T, d) @ w_o, {"k": k, "v": v}
