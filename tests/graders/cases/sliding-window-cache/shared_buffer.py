# One module-level buffer per shape, shared by every cache of that shape.
# expect: failed
# diagnosis: two caches share one storage
import torch

_BUFFERS = {}


class SlidingWindowCache:
    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):
        self.window, self.n_sink = window, n_sink
        key = (window, n_sink, batch, n_heads, head_dim, dtype)
        if key not in _BUFFERS:
            _BUFFERS[key] = torch.zeros(2, batch, n_heads, n_sink + window, head_dim, dtype=dtype)
        self.kv = _BUFFERS[key]
        self.seen = 0

    def update(self, k, v):
        n = k.shape[2]
        pos = torch.arange(self.seen, self.seen + n)
        self.seen += n
        keep = (pos < self.n_sink) | (pos >= self.seen - self.window)
        slot = torch.where(pos < self.n_sink, pos, self.n_sink + (pos - self.n_sink) % self.window)[keep]
        self.kv[0][:, :, slot], self.kv[1][:, :, slot] = k[:, :, keep], v[:, :, keep]
        start = max(self.n_sink, self.seen - self.window)
        kept = torch.cat([torch.arange(min(self.seen, self.n_sink)), torch.arange(start, max(start, self.seen))])
        order = torch.where(kept < self.n_sink, kept, self.n_sink + (kept - self.n_sink) % self.window)
        return self.kv[0][:, :, order], self.kv[1][:, :, order], kept
