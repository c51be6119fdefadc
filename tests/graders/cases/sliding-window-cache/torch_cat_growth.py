# Keeps everything with torch.cat and slices out the kept tokens: right values, storage that grows.
# expect: failed
# diagnosis: the storage grows
import torch


class SlidingWindowCache:
    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):
        self.window, self.n_sink = window, n_sink
        self.k = torch.zeros(batch, n_heads, n_sink + window, head_dim, dtype=dtype)[:, :, :0]
        self.v = torch.zeros(batch, n_heads, n_sink + window, head_dim, dtype=dtype)[:, :, :0]
        self.dummy = torch.zeros(batch, n_heads, n_sink + window, head_dim, dtype=dtype)
        self.dummy2 = torch.zeros(batch, n_heads, n_sink + window, head_dim, dtype=dtype)

    def update(self, k, v):
        self.k = torch.cat([self.k, k], dim=2)
        self.v = torch.cat([self.v, v], dim=2)
        t = self.k.shape[2]
        start = max(self.n_sink, t - self.window)
        kept = torch.cat([torch.arange(min(t, self.n_sink)), torch.arange(start, max(start, t))])
        return self.k[:, :, kept], self.v[:, :, kept], kept
