# expect: passed
# repeat_kv the transformers way: expand a new group axis, then fold it into the heads.
import math

import torch
import torch.nn as nn


def repeat_kv(x, n_rep):
    B, n_kv, S, hd = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None].expand(B, n_kv, n_rep, S, hd).reshape(B, n_kv * n_rep, S, hd)


class GQA(nn.Module):
    def __init__(self, d, n_q, n_kv):
        super().__init__()
        self.n_q, self.n_kv, self.hd = n_q, n_kv, d // n_q
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        B, T, d = x.shape
        q = self.q(x).view(B, T, self.n_q, self.hd).transpose(1, 2)
        k, v = self.kv(x).chunk(2, dim=-1)  # keys first, then values: same as view(B, T, 2, n_kv, hd)
        k = k.view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = v.view(B, T, self.n_kv, self.hd).transpose(1, 2)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        S = k.shape[2]
        n_rep = self.n_q // self.n_kv
        att = q @ repeat_kv(k, n_rep).transpose(-2, -1) / math.sqrt(self.hd)
        att = att.masked_fill(torch.ones(T, S, dtype=torch.bool).tril(S - T) == 0, float("-inf"))
        y = att.softmax(-1) @ repeat_kv(v, n_rep)
        return self.o(y.transpose(1, 2).reshape(B, T, d)), (k, v)
