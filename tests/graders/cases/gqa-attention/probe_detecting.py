# expect: failed
# diagnosis: the module ignored a change to the cache it was given
# Hostile: keeps every token it has seen and recomputes the whole causal pass from them, ignoring
# the cache passed in, unless the call looks like the grader's probe: a cache of a length it did
# not expect, or one whose position 1 (the row the probe used to change) is not the one it
# returned. Passed "reads the past from the cache" until every call became a possible probe.
import math

import torch


class GQA(torch.nn.Module):
    def __init__(self, d, n_q, n_kv):
        super().__init__()
        self.d, self.n_q, self.n_kv, self.hd = d, n_q, n_kv, d // n_q
        self.q = torch.nn.Linear(d, d, bias=False)
        self.kv = torch.nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.tokens = None  # every token of the current sequence, (B, S, d)

    def _attend(self, x, past):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.n_q, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).permute(2, 0, 3, 1, 4)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        S = k.shape[2]
        rep = self.n_q // self.n_kv
        kr, vr = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
        scores = (q @ kr.transpose(-2, -1) / math.sqrt(self.hd)).masked_fill(~mask, float("-inf"))
        y = (scores.softmax(-1) @ vr).transpose(1, 2).reshape(B, T, self.d)
        return self.o(y), (k, v)

    def _mine(self, cache):
        if cache is None or self.tokens is None or cache[0].shape[2] != self.tokens.shape[1]:
            return False
        if cache[0].shape[2] < 2:
            return True
        _, (k, _) = self._attend(self.tokens, None)
        return torch.allclose(cache[0][:, :, 1], k[:, :, 1], atol=1e-5)

    def forward(self, x, cache=None):
        if cache is not None and not self._mine(cache):
            self.tokens = None  # the probe: be honest
            return self._attend(x, cache)
        self.tokens = x if cache is None else torch.cat([self.tokens, x], dim=1)
        y, kv = self._attend(self.tokens, None)  # the whole pass again, cache ignored
        return y[:, -x.shape[1] :], kv
