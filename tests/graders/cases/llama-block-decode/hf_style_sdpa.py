# Correct, Hugging Face style: F.rms_norm, inv_freq = 1 / base ** (arange(0, hd, 2) / hd), rotate_half,
# scaled_dot_product_attention with enable_gqa (no repeat at all), the cache's length from its dim -2.
# expect: passed
import torch
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, positions, base):
    hd = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    emb = torch.cat([positions.float()[:, None] * inv_freq] * 2, dim=-1)  # (T, hd)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def llama_block(x, weights, n_heads, n_kv_heads, cache=None, base=10000.0, eps=1e-5):
    if n_heads % n_kv_heads:
        raise ValueError(f"{n_heads} query heads cannot share {n_kv_heads} kv heads evenly")
    B, T, d = x.shape
    past = cache["k"].size(-2) if cache else 0
    pos = torch.arange(past, past + T)
    z = F.rms_norm(x, (d,), weights["attn_norm"], eps)
    q = (z @ weights["w_q"]).unflatten(-1, (n_heads, -1)).transpose(1, 2)
    k = (z @ weights["w_k"]).unflatten(-1, (n_kv_heads, -1)).transpose(1, 2)
    v = (z @ weights["w_v"]).unflatten(-1, (n_kv_heads, -1)).transpose(1, 2)
    q, k = rope(q, pos, base), rope(k, pos, base)
    if past:
        k, v = torch.cat((cache["k"], k), -2), torch.cat((cache["v"], v), -2)
    mask = torch.ones(T, past + T, dtype=torch.bool).tril(past)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    h = x + o.transpose(1, 2).flatten(2) @ weights["w_o"]
    m = F.rms_norm(h, (d,), weights["mlp_norm"], eps)
    return h + (F.silu(m @ weights["w_gate"]) * (m @ weights["w_up"])) @ weights["w_down"], {"k": k, "v": v}
