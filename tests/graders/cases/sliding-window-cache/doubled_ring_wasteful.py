# expect: passed
# Correct but wasteful: a ring buffer written in place, as the worked solution's, but read back by
# unrolling the ring the textbook way: the window's slots concatenated with themselves, so the
# `window` most recent tokens are one contiguous slice of it. Every update allocates a
# (B, H, 2 * window, hd) tensor where the reference gathers the n_sink + window kept ones. The cost
# report shows it (tests/graders/checks/test_cost_report.py).
import torch


class SlidingWindowCache:
    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):
        self.window, self.n_sink = window, n_sink
        self.k = torch.zeros(batch, n_heads, n_sink + window, head_dim, dtype=dtype)  # allocated once
        self.v = torch.zeros(batch, n_heads, n_sink + window, head_dim, dtype=dtype)
        self.seen = 0

    def _slots(self, positions):
        ring = self.n_sink + (positions - self.n_sink) % self.window
        return torch.where(positions < self.n_sink, positions, ring)

    def update(self, k, v):
        n = k.shape[2]
        positions = torch.arange(self.seen, self.seen + n)
        self.seen += n
        keep = (positions < self.n_sink) | (positions >= self.seen - self.window)
        slots = self._slots(positions[keep])
        self.k[:, :, slots] = k[:, :, keep]
        self.v[:, :, slots] = v[:, :, keep]

        n_sinks = min(self.seen, self.n_sink)
        start = max(self.n_sink, self.seen - self.window)  # the oldest recent position kept
        count = max(0, self.seen - start)
        oldest = (start - self.n_sink) % self.window  # its slot within the ring
        kept = []
        for buffer in (self.k, self.v):
            ring = buffer[:, :, self.n_sink :]
            unrolled = torch.cat([ring, ring], dim=2)  # (B, H, 2 * window, hd): any window is one slice
            kept.append(torch.cat([buffer[:, :, :n_sinks], unrolled[:, :, oldest : oldest + count]], dim=2))
        positions = torch.cat([torch.arange(n_sinks), torch.arange(start, start + count)])
        return kept[0], kept[1], positions
