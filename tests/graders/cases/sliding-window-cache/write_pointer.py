# Correct: one (2, B, H, slots, hd) tensor, a write pointer that wraps, tokens written one by one.
# expect: passed
import torch


class SlidingWindowCache:
    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):
        self.window, self.n_sink = window, n_sink
        self.kv = torch.empty(2, batch, n_heads, n_sink + window, head_dim, dtype=dtype)
        self.count = 0
        self.ptr = n_sink  # the next ring slot to write

    def update(self, k, v):
        for i in range(k.shape[2]):
            if self.count < self.n_sink:
                slot = self.count
            else:
                slot = self.ptr
                self.ptr = self.n_sink + (self.ptr - self.n_sink + 1) % self.window
            self.kv[0, :, :, slot] = k[:, :, i]
            self.kv[1, :, :, slot] = v[:, :, i]
            self.count += 1
        sinks = list(range(min(self.count, self.n_sink)))
        n_recent = min(self.window, max(0, self.count - self.n_sink))
        if self.count - self.n_sink <= self.window:  # the ring has not wrapped yet
            ring = list(range(self.n_sink, self.n_sink + n_recent))
        else:  # the oldest slot is the one about to be overwritten
            ring = [self.n_sink + (self.ptr - self.n_sink + j) % self.window for j in range(self.window)]
        slots = torch.tensor(sinks + ring, dtype=torch.long)
        positions = torch.tensor(sinks + list(range(self.count - n_recent, self.count)), dtype=torch.long)
        return self.kv[0][:, :, slots], self.kv[1][:, :, slots], positions
