# The whole score matrix at once, and the in-process recorder of tensor sizes replaced so that
# it reports nothing: the kernel's count of the process's peak memory still sees the matrix.
# expect: failed
# diagnosis: builds the full score matrix
# outside-only: it patches the in-process recorder the in-process harness relies on
import math
import sys

import torch

_runtime = sys.modules["graders.sandbox.runtime"]
_runtime.measured_call = lambda fn, args, kwargs: (fn(*args, **kwargs), 0)


def tiled_attention(q, k, v, block_size, causal=False):
    Tq, hd = q.shape[-2:]
    Tk = k.shape[-2]
    s = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, H, Tq, Tk): all at once
    if causal:
        query_pos = torch.arange(Tk - Tq, Tk)[:, None]
        s = s.masked_fill(torch.arange(Tk)[None, :] > query_pos, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def merge_attention(o1, lse1, o2, lse2):
    lse = torch.logaddexp(lse1, lse2)
    safe = torch.where(lse == float("-inf"), 0.0, lse)
    return torch.exp(lse1 - safe)[..., None] * o1 + torch.exp(lse2 - safe)[..., None] * o2, lse
