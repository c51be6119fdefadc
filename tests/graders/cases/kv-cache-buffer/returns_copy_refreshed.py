# Returns clones, and patches the sandbox's wire encoder so that every clone handed out is
# refreshed from the buffer just before the grader reads it back: the read-backs see "views".
# The kernel's count of the process's memory still sees every clone.
# expect: failed
# diagnosis: update returns a copy, not a view
# outside-only: it patches the child's encoder, which the in-process harness does not use
import sys

import torch

_wire = sys.modules["graders.sandbox.wire"]
_handed_out = []  # (copy_k, copy_v, cache, layer, end): every clone given out
_original_encode = _wire.Encoder.encode


def _refreshing_encode(self, value, depth=0):
    if depth == 0:  # once per reply, before any of it is encoded
        for copy_k, copy_v, cache, layer, end in _handed_out:
            copy_k.copy_(cache.k[layer, :, :, :end])
            copy_v.copy_(cache.v[layer, :, :, :end])
    return _original_encode(self, value, depth)


_wire.Encoder.encode = _refreshing_encode


class KVCache:
    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        self.batch, self.n_heads, self.max_len, self.head_dim = batch, n_heads, max_len, head_dim
        shape = (n_layers, batch, n_heads, max_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)

    def update(self, layer, k, v, start):
        if k.shape != v.shape:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")
        B, H, n, hd = k.shape
        if (B, H, hd) != (self.batch, self.n_heads, self.head_dim):
            raise ValueError(
                f"(B, H, hd)={(B, H, hd)} does not fit {(self.batch, self.n_heads, self.head_dim)}"
            )
        if start < 0:
            raise ValueError(f"start={start} < 0")
        if start + n > self.max_len:
            raise ValueError(f"start + n = {start + n} > max_len={self.max_len}")
        self.k[layer, :, :, start : start + n] = k
        self.v[layer, :, :, start : start + n] = v
        end = start + n
        copy_k, copy_v = self.k[layer, :, :, :end].clone(), self.v[layer, :, :, :end].clone()
        _handed_out.append((copy_k, copy_v, self, layer, end))
        return copy_k, copy_v

    def reorder(self, beam_idx):
        self.k = self.k[:, beam_idx]
        self.v = self.v[:, beam_idx]
