# expect: failed
# diagnosis: your code raised NotImplementedError
# The starter from questions/challenges/gqa-attention/starter.py, verbatim below.
import torch
import torch.nn as nn
import torch.nn.functional as F


class GQA(nn.Module):
    """Grouped-query attention with a KV cache.

    GQA(d, n_q, n_kv): n_q query heads share n_kv key-value heads, hd = d // n_q.
    Layers (no biases): q = Linear(d, d), kv = Linear(d, 2 * n_kv * hd), o = Linear(d, d).
    """

    def __init__(self, d, n_q, n_kv):
        super().__init__()
        raise NotImplementedError

    def forward(self, x, cache=None):
        """x: (B, T, d); cache: None or (k, v), each (B, n_kv, P, hd).

        Returns (y, (k, v)): y is (B, T, d); k and v are (B, n_kv, P + T, hd).
        """
        raise NotImplementedError
