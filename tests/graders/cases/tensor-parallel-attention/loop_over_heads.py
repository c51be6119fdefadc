# expect: passed
# Gathers each head's columns and rows one at a time, and runs the rank's heads one by one with einsum.
import math

import torch


def shard_attention(w_qkv, w_o, n_heads, world_size):
    if n_heads % world_size:
        raise ValueError(f"{n_heads} heads do not split over {world_size} ranks")
    d = w_o.shape[0]
    hd = d // n_heads
    local = n_heads // world_size
    shards = []
    for r in range(world_size):
        heads = range(r * local, (r + 1) * local)
        cols = [w_qkv[:, part * d + h * hd : part * d + (h + 1) * hd] for part in range(3) for h in heads]
        rows = [w_o[h * hd : (h + 1) * hd] for h in heads]
        shards.append((torch.cat(cols, dim=1), torch.cat(rows, dim=0)))
    return shards


def attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):
    T = x.shape[1]
    d_r = w_qkv_r.shape[1] // 3
    hd = d_r // n_local_heads
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    out = 0
    for i in range(n_local_heads):
        q, k, v = (x @ w_qkv_r[:, part * d_r + i * hd : part * d_r + (i + 1) * hd] for part in range(3))
        scores = torch.einsum("btc,bsc->bts", q, k) / math.sqrt(hd)
        probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        out = out + torch.einsum("bts,bsc->btc", probs, v) @ w_o_r[i * hd : (i + 1) * hd]
    return out
