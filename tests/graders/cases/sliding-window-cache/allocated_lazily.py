# Allocates nothing until the first update (then the right size, once): not preallocated.
# expect: failed
# diagnosis: the storage is not allocated for exactly n_sink + window positions
import torch


class SlidingWindowCache:
    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):
        self.window, self.n_sink, self.shape, self.dtype = window, n_sink, (batch, n_heads, head_dim), dtype
        self.k = self.v = None
        self.seen = 0

    def update(self, k, v):
        if self.k is None:
            B, H, hd = self.shape
            self.k = torch.zeros(B, H, self.n_sink + self.window, hd, dtype=self.dtype)
            self.v = torch.zeros_like(self.k)
        n = k.shape[2]
        pos = torch.arange(self.seen, self.seen + n)
        self.seen += n
        keep = (pos < self.n_sink) | (pos >= self.seen - self.window)
        slot = torch.where(pos < self.n_sink, pos, self.n_sink + (pos - self.n_sink) % self.window)[keep]
        self.k[:, :, slot], self.v[:, :, slot] = k[:, :, keep], v[:, :, keep]
        kept = torch.cat([torch.arange(min(self.seen, self.n_sink)),
                          torch.arange(max(self.n_sink, self.seen - self.window), max(self.n_sink, self.seen))])
        order = torch.where(kept < self.n_sink, kept, self.n_sink + (kept - self.n_sink) % self.window)
        return self.k[:, :, order], self.v[:, :, order], kept
