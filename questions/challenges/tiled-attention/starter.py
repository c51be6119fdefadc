import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    """softmax(q k^T / sqrt(hd)) v computed over blocks of at most block_size keys.

    q:  (B, H, Tq, hd)        k, v: (B, H, Tk, hd)        returns (B, H, Tq, hd)
    Keep a running maximum, a running denominator and a running output per query
    (online softmax); never build the (Tq, Tk) score matrix. With causal=True, query i
    sits at position Tk - Tq + i and sees keys 0 .. Tk - Tq + i.
    """
    raise NotImplementedError


def merge_attention(o1, lse1, o2, lse2):
    """Merge two partial results over disjoint sets of keys (split-K / Flash-Decoding).

    o1, o2: (B, H, Tq, hd); lse1, lse2: (B, H, Tq), the log of each part's sum of exp(scores).
    Returns (o, lse) over the union. A part with lse = -inf (no key) contributes nothing.
    """
    raise NotImplementedError
