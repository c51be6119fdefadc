# expect: failed
# diagnosis: the cache is returned as (B, S, n_kv, hd)
# Keeps the cache in the (B, S, n_kv, hd) layout the projection came out in.
import torch
import torch.nn as nn
import torch.nn.functional as F


class GQA(nn.Module):
    def __init__(self, d, n_q, n_kv):
        super().__init__()
        self.n_q, self.n_kv, self.hd = n_q, n_kv, d // n_q
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        B, T, d = x.shape
        r = self.n_q // self.n_kv
        q = self.q(x).view(B, T, self.n_q, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 1), torch.cat([cache[1], v], 1)
        new_cache = (k, v)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
        S = k.shape[2]
        mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
        att = (q @ k.transpose(-2, -1) / self.hd**0.5).masked_fill(~mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(B, T, d)), new_cache
