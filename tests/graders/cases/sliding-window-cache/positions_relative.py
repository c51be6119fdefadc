# Positions counted within the cache.
# expect: failed
# diagnosis: positions are counted within the cache (0 .. K-1)
import torch


class SlidingWindowCache:
    """A KV cache of fixed size: the first n_sink tokens ever seen and the last `window`.

    Slots 0 .. n_sink-1 hold the sinks for good; slots n_sink .. n_sink+window-1 are a ring
    buffer: position p (p >= n_sink) lives in slot n_sink + (p - n_sink) % window.
    """

    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):
        self.window, self.n_sink = window, n_sink
        size = n_sink + window
        self.k = torch.zeros(batch, n_heads, size, head_dim, dtype=dtype)  # allocated once
        self.v = torch.zeros(batch, n_heads, size, head_dim, dtype=dtype)
        self.seen = 0  # tokens written so far = the next token's position

    def _slots(self, positions):
        ring = self.n_sink + (positions - self.n_sink) % self.window
        return torch.where(positions < self.n_sink, positions, ring)

    def update(self, k, v):
        """k, v (B, H, n, hd) -> kept k, v (B, H, K, hd) in position order and their positions (K,)."""
        n = k.shape[2]
        positions = torch.arange(self.seen, self.seen + n)
        self.seen += n

        # Of a chunk longer than the window only the sinks and the last `window` survive;
        # writing just those means no slot is written twice in one go.
        keep = (positions < self.n_sink) | (positions >= self.seen - self.window)
        slots = self._slots(positions[keep])
        self.k[:, :, slots] = k[:, :, keep]  # in place: the storage never grows or moves
        self.v[:, :, slots] = v[:, :, keep]

        # The kept positions, oldest first: the sinks, then the recent ones.
        sinks = torch.arange(min(self.seen, self.n_sink))
        start = max(self.n_sink, self.seen - self.window)
        recent = torch.arange(start, max(start, self.seen))  # empty while still filling the sinks
        kept = torch.cat([sinks, recent])
        order = self._slots(kept)
        return self.k[:, :, order], self.v[:, :, order], torch.arange(kept.shape[0])
