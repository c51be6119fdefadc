# expect: passed
# No repeat at all: the queries are reshaped into (B, n_kv, group, T, hd) and each group
# reads its own kv head; the mask is built from absolute positions.
import math

import torch
import torch.nn as nn


class GQA(nn.Module):
    def __init__(self, d, n_q, n_kv):
        super().__init__()
        self.n_q, self.n_kv, self.hd = n_q, n_kv, d // n_q
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        B, T, d = x.shape
        group = self.n_q // self.n_kv
        q = self.q(x).view(B, T, self.n_kv, group, self.hd)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)  # (B, n_kv, T, hd)
        past = 0 if cache is None else cache[0].shape[2]
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        scores = torch.einsum("btngh,bnsh->bngts", q, k) / math.sqrt(self.hd)
        q_pos = torch.arange(past, past + T)[:, None]
        k_pos = torch.arange(past + T)[None, :]
        scores = scores.masked_fill(k_pos > q_pos, float("-inf"))
        y = torch.einsum("bngts,bnsh->btngh", scores.softmax(-1), v)
        return self.o(y.reshape(B, T, d)), (k, v)
