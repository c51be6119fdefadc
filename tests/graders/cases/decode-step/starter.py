# expect: failed
# diagnosis: your code raised NotImplementedError
# The starter from questions/challenges/decode-step/starter.py, verbatim below.
import math

import torch
import torch.nn.functional as F


def step(x, w_qkv, w_o, n_heads, cache):
    """One decode step of causal self-attention with a KV cache.

    x:      (B, 1, d), the newest token's hidden state
    w_qkv:  (d, 3d), q, k, v = (x @ w_qkv).split(d, dim=-1)
    w_o:    (d, d)
    cache:  a dict, empty before the first step. Afterwards cache["k"] and
            cache["v"] must hold (B, n_heads, t, hd) for the t tokens seen so far.
    Returns (B, 1, d): row t-1 of full causal self-attention over all t tokens.
    """
    raise NotImplementedError
