# expect: passed
# The worked solution from questions/challenges/gqa-attention/solution.py, verbatim below.
import torch
import torch.nn as nn
import torch.nn.functional as F


class GQA(nn.Module):
    """Grouped-query attention with a KV cache.

    n_q query heads share n_kv key-value heads: n_kv == n_q is plain multi-head
    attention, n_kv == 1 is multi-query attention.
    """

    def __init__(self, d, n_q, n_kv):
        super().__init__()
        if d % n_q != 0:
            raise ValueError(f"d={d} is not a multiple of n_q={n_q}")
        if n_q % n_kv != 0:
            raise ValueError(f"n_q={n_q} is not a multiple of n_kv={n_kv}")
        self.n_q, self.n_kv = n_q, n_kv
        self.hd = d // n_q
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)  # fewer kv heads: a smaller projection
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.n_q, self.hd).transpose(1, 2)  # (B, n_q, T, hd)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)  # each (B, T, n_kv, hd)
        k, v = k.transpose(1, 2), v.transpose(1, 2)  # each (B, n_kv, T, hd)

        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)  # (B, n_kv, S, hd)
            v = torch.cat([cache[1], v], dim=2)
        # Cache *before* repeating: n_kv heads, n_q // n_kv times smaller than
        # caching the repeated tensors. This is the memory GQA is chosen for.
        new_cache = (k, v)

        # Query head i reads kv head i // group: repeat_interleave puts each kv head's
        # copies next to each other, matching that mapping.
        group = self.n_q // self.n_kv
        k = k.repeat_interleave(group, dim=1)  # (B, n_q, S, hd)
        v = v.repeat_interleave(group, dim=1)

        # With S - T positions already cached, new query i sits at position S - T + i,
        # so it sees keys 0..S - T + i: shift the diagonal by S - T.
        S = k.shape[2]
        mask = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)  # (T, S)
        att = q @ k.transpose(-2, -1) / self.hd**0.5  # (B, n_q, T, S)
        att = att.masked_fill(~mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v  # (B, n_q, T, hd)

        y = y.transpose(1, 2).reshape(B, T, -1)  # (B, T, d)
        return self.o(y), new_cache
