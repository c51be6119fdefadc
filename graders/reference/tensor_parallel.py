"""Megatron-LM's tensor-parallel causal self-attention, simulated on one CPU (tensor-parallel-attention).

Shoeybi et al. (arXiv:1909.08053, section 3) split a self-attention block over W ranks by heads:
the q, k and v projections are column-parallel (rank r holds the columns of its heads, so it
computes their queries, keys and values alone) and the output projection is row-parallel (rank r
holds the rows its heads' outputs multiply), so each rank's product is a partial output of full
width and one all-reduce (a sum) after the block restores the layer's output. Rank r owns heads
r*H/W .. (r+1)*H/W - 1; its w_qkv_r is `[q | k | v]`, each d/W columns wide in head order (the
shared layout's split, per rank, rather than Megatron's per-head interleaved storage).

Two ways to cut the shards, tested against each other (tests/graders/reference/test_tensor_parallel.py):
- `shard_attention_explicit` walks the heads one at a time and gathers each one's columns and rows;
- `shard_attention` views w_qkv as (d, 3, W, d/W) and w_o as (W, d/W, d) and takes rank r's slices.
`attention_on_rank` is the shared layout's attention over the rank's heads alone; `all_reduce` sums.
"""

from __future__ import annotations

import torch

from graders.reference.attention import attend, head_size, merge_heads, split_heads

Shard = tuple[torch.Tensor, torch.Tensor]  # (w_qkv_r (d, 3d/W), w_o_r (d/W, d))


def heads_per_rank(n_heads: int, world_size: int) -> int:
    """H / W, refusing a head count the ranks do not divide (the contract's ValueError)."""
    if world_size <= 0 or n_heads % world_size != 0:
        raise ValueError(f"n_heads={n_heads} is not a multiple of world_size={world_size}")
    return n_heads // world_size


def rank_heads(n_heads: int, world_size: int, rank: int) -> range:
    """The heads rank `rank` owns, in order."""
    local = heads_per_rank(n_heads, world_size)
    return range(rank * local, (rank + 1) * local)


def shard_attention_explicit(
    w_qkv: torch.Tensor, w_o: torch.Tensor, n_heads: int, world_size: int
) -> list[Shard]:
    """One (w_qkv_r, w_o_r) per rank, head by head: rank r's q columns of its heads, then its k
    columns, then its v columns; its rows of w_o in the same head order."""
    heads_per_rank(n_heads, world_size)
    d = w_o.shape[0]
    hd = head_size(d, n_heads)
    shards = []
    for rank in range(world_size):
        heads = rank_heads(n_heads, world_size, rank)
        blocks = [
            w_qkv[:, which * d + h * hd : which * d + (h + 1) * hd] for which in range(3) for h in heads
        ]  # 3 x local blocks of (d, hd): q heads, then k heads, then v heads
        rows = [w_o[h * hd : (h + 1) * hd] for h in heads]  # local blocks of (hd, d)
        shards.append((torch.cat(blocks, dim=1), torch.cat(rows, dim=0)))
    return shards


def shard_attention(w_qkv: torch.Tensor, w_o: torch.Tensor, n_heads: int, world_size: int) -> list[Shard]:
    """The same shards by views: w_qkv (d, 3d) as (d, 3, W, d/W), w_o (d, d) as (W, d/W, d)."""
    heads_per_rank(n_heads, world_size)
    d = w_o.shape[0]
    head_size(d, n_heads)
    d_r = d // world_size  # the rank's width: H/W heads of hd
    by_rank = w_qkv.reshape(
        d, 3, world_size, d_r
    )  # column h*hd + j of block `which` -> [:, which, rank, ...]
    rows = w_o.reshape(world_size, d_r, d)  # (W, d/W, d)
    return [(by_rank[:, :, r].reshape(d, 3 * d_r), rows[r]) for r in range(world_size)]


def attention_on_rank(
    x: torch.Tensor, w_qkv_r: torch.Tensor, w_o_r: torch.Tensor, n_local_heads: int
) -> torch.Tensor:
    """x (B, T, d) -> the rank's partial output (B, T, d): its heads' attention times its rows of w_o."""
    d_r = w_qkv_r.shape[1] // 3  # n_local_heads * hd: the head size is the shard's, not d // n_heads
    q, k, v = (x @ w_qkv_r).split(d_r, dim=-1)  # each (B, T, d/W)
    q, k, v = (split_heads(t, n_local_heads) for t in (q, k, v))  # each (B, n_local, T, hd)
    return merge_heads(attend(q, k, v)) @ w_o_r  # (B, T, d/W) @ (d/W, d) -> (B, T, d)


def attention_on_rank_explicit(
    x: torch.Tensor, w_qkv_r: torch.Tensor, w_o_r: torch.Tensor, n_local_heads: int
) -> torch.Tensor:
    """The same partial, one head at a time: each head's output times its own rows of w_o_r."""
    d_r = w_qkv_r.shape[1] // 3
    hd = head_size(d_r, n_local_heads, "n_local_heads")
    partial = torch.zeros(*x.shape[:2], w_o_r.shape[1], dtype=x.dtype)  # (B, T, d)
    for i in range(n_local_heads):
        start = i * hd  # head i's columns within each of the q, k and v blocks
        q, k, v = (x @ w_qkv_r[:, b * d_r + start : b * d_r + start + hd] for b in range(3))  # (B, T, hd)
        o = attend(q[:, None], k[:, None], v[:, None])[:, 0]  # one head: (B, T, hd)
        partial = partial + o @ w_o_r[start : start + hd]  # (B, T, hd) @ (hd, d)
    return partial


def all_reduce(partials: list[torch.Tensor]) -> torch.Tensor:
    """What the ranks' all-reduce leaves on every rank: the sum of the partials."""
    return torch.stack(partials).sum(dim=0)


def tensor_parallel_attention(
    x: torch.Tensor, w_qkv: torch.Tensor, w_o: torch.Tensor, n_heads: int, world_size: int
) -> torch.Tensor:
    """Shard, run every rank on its own shard, all-reduce: causal_self_attention's output (B, T, d)."""
    local = heads_per_rank(n_heads, world_size)
    shards = shard_attention(w_qkv, w_o, n_heads, world_size)
    return all_reduce([attention_on_rank(x, w_qkv_r, w_o_r, local) for w_qkv_r, w_o_r in shards])
