# expect: passed
# Correct but wasteful: keeps the preallocated slab and returns views of it, but writes each update
# by rebuilding the whole layer with torch.cat (past, new, the unwritten rest) and copying that back
# in place. The storage never moves, so the views hold; every one-position step allocates a whole
# (B, H, max_len, hd) layer twice (k and v). The cost report shows it, 128 KiB against the
# reference's none (tests/graders/checks/test_cost_report.py).
import torch


class KVCache:
    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        self.batch, self.n_heads, self.max_len, self.head_dim = batch, n_heads, max_len, head_dim
        shape = (n_layers, batch, n_heads, max_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # (L, B, H, max_len, hd)
        self.v = torch.zeros(shape, dtype=dtype, device=device)

    def update(self, layer, k, v, start):
        if k.shape != v.shape or k.dim() != 4:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} should be one (B, H, n, hd) shape")
        B, H, n, hd = k.shape
        if (B, H, hd) != (self.batch, self.n_heads, self.head_dim):
            raise ValueError(
                f"k is {tuple(k.shape)}, the cache holds ({self.batch}, {self.n_heads}, n, {self.head_dim})"
            )
        if start < 0 or start + n > self.max_len:
            raise ValueError(f"start={start} with n={n} does not fit max_len={self.max_len}")
        end = start + n
        for slab, new in ((self.k, k), (self.v, v)):
            rebuilt = torch.cat([slab[layer, :, :, :start], new, slab[layer, :, :, end:]], dim=2)
            slab[layer].copy_(rebuilt)  # (B, H, max_len, hd), written back into the same storage
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def reorder(self, beam_idx):
        self.k.copy_(self.k.index_select(1, beam_idx))
        self.v.copy_(self.v.index_select(1, beam_idx))
