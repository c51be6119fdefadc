# expect: passed
# Einsum scores; the cache also carries its own length under another key, which is allowed
# as long as the past is read from cache["k"] and cache["v"].
import torch


def step(x, w_qkv, w_o, n_heads, cache):
    B, _, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).view(B, 1, 3, n_heads, hd).permute(2, 0, 3, 1, 4)  # each (B, h, 1, hd)
    past_k = cache.get("k", k[:, :, :0])
    past_v = cache.get("v", v[:, :, :0])
    k_all = torch.cat([past_k, k], dim=2)
    v_all = torch.cat([past_v, v], dim=2)
    cache["k"], cache["v"], cache["length"] = k_all, v_all, k_all.shape[2]
    weights = torch.einsum("bhqd,bhtd->bhqt", q, k_all).mul(hd**-0.5).softmax(-1)
    y = torch.einsum("bhqt,bhtd->bqhd", weights, v_all)  # (B, 1, h, hd)
    return y.reshape(B, 1, d) @ w_o
