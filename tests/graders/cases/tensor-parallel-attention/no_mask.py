# expect: failed
# diagnosis: there is no causal mask
# Forgets the causal mask.
import math

import torch


def shard_attention(w_qkv, w_o, n_heads, world_size):
    """w_qkv (d, 3d), w_o (d, d) -> [(w_qkv_r (d, 3d/W), w_o_r (d/W, d)) for each rank r]."""
    if n_heads % world_size != 0:
        raise ValueError(f"n_heads={n_heads} is not a multiple of world_size={world_size}")
    d = w_o.shape[0]
    d_r = d // world_size  # the rank's heads: n_heads / world_size of hd = d // n_heads each
    q, k, v = w_qkv.split(d, dim=1)  # each (d, d); head h owns columns h*hd:(h+1)*hd of each
    shards = []
    for r in range(world_size):
        cols = slice(r * d_r, (r + 1) * d_r)  # heads r*H/W .. (r+1)*H/W - 1, in order
        w_qkv_r = torch.cat([q[:, cols], k[:, cols], v[:, cols]], dim=1)  # (d, 3d/W): [q | k | v]
        shards.append((w_qkv_r, w_o[cols]))  # row-parallel: the rows its heads' outputs multiply
    return shards


def attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):
    """x (B, T, d) -> this rank's partial output (B, T, d); the all-reduce sums the partials."""
    B, T, _ = x.shape
    d_r = w_qkv_r.shape[1] // 3  # n_local_heads * hd
    hd = d_r // n_local_heads  # the layer's head size, not x's width over n_local_heads
    q, k, v = (x @ w_qkv_r).split(d_r, dim=-1)  # each (B, T, d/W)
    q, k, v = (t.view(B, T, n_local_heads, hd).transpose(1, 2) for t in (q, k, v))  # (B, n_local, T, hd)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, n_local, T, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    probs = torch.softmax(scores, dim=-1)
    o = (probs @ v).transpose(1, 2).reshape(B, T, d_r)  # the rank's heads side by side, in order
    return o @ w_o_r  # (B, T, d): a partial sum; no residual, no bias, nothing averaged
