import torch


def shard_attention(w_qkv, w_o, n_heads, world_size):
    """w_qkv (d, 3d) and w_o (d, d) -> one (w_qkv_r, w_o_r) per rank r.

    Rank r owns heads r*H/W .. (r+1)*H/W - 1. w_qkv_r (d, 3d/W) is [q | k | v], each block the
    columns of that projection for the rank's heads, in head order; w_o_r (d/W, d) holds the rows
    of w_o those heads' outputs multiply. ValueError when n_heads is not a multiple of world_size.
    """
    raise NotImplementedError


def attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads):
    """x (B, T, d) -> the rank's partial output (B, T, d): causal attention over its own heads,
    times its rows of w_o. The grader sums the partials of all ranks (the all-reduce)."""
    raise NotImplementedError
