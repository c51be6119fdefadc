# expect: failed
# diagnosis: while loading a state dict
# Names its layers wq, wkv, wo: the grader's q.weight, kv.weight, o.weight do not load.
import torch.nn as nn
import torch.nn.functional as F


class GQA(nn.Module):
    def __init__(self, d, n_q, n_kv):
        super().__init__()
        self.n_q, self.n_kv, self.hd = n_q, n_kv, d // n_q
        self.wq = nn.Linear(d, d, bias=False)
        self.wkv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        B, T, d = x.shape
        q = self.wq(x).view(B, T, self.n_q, self.hd).transpose(1, 2)
        k, v = self.wkv(x).view(B, T, 2, self.n_kv, self.hd).unbind(2)
        y = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, d)), (k, v)
