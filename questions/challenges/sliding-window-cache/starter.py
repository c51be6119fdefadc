import torch


class SlidingWindowCache:
    """A KV cache that keeps the first n_sink tokens ever seen and the most recent `window`.

    Allocate storage for exactly n_sink + window positions here, once; it must never grow
    or move (the same data_ptr() for the life of the cache).
    """

    def __init__(self, window, n_sink, batch, n_heads, head_dim, dtype=torch.float32):
        raise NotImplementedError

    def update(self, k, v):
        """k, v: (B, H, n, hd), the next n tokens (n may exceed the window).

        Returns (k_kept, v_kept, positions): the kept keys and values (B, H, K, hd) in
        position order, and a LongTensor (K,) of their absolute positions.
        """
        raise NotImplementedError
