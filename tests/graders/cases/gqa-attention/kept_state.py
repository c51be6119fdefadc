# expect: failed
# diagnosis: the module ignored a change to the cache it was given
# Keeps its own copy of the cache on the module and prefers it to the argument.
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
        self.saved = None

    def forward(self, x, cache=None):
        B, T, d = x.shape
        q = self.q(x).view(B, T, self.n_q, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        if cache is not None:
            past = self.saved if self.saved is not None and self.saved[0].shape == cache[0].shape else cache
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        self.saved = (k, v)
        S = k.shape[2]
        mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.o(y.transpose(1, 2).reshape(B, T, d)), (k, v)
