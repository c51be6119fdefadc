# expect: failed
# The starter file: every method raises NotImplementedError.
import torch


class KVCache:
    """Keys and values of every layer, preallocated once for max_len positions."""

    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        """Allocate the storage for all layers now; update must never grow it."""
        raise NotImplementedError

    def update(self, layer, k, v, start):
        """Write k, v of shape (batch, n_heads, n, head_dim) at positions start..start+n of `layer`.

        Returns (k_all, v_all): views (not copies) of positions 0..start+n of that layer,
        each (batch, n_heads, start+n, head_dim). Raises ValueError when start + n > max_len,
        when a batch, head count or head size does not match the cache, when k and v have
        different shapes, or when start is negative.
        """
        raise NotImplementedError

    def reorder(self, beam_idx):
        """Beam search: make batch row i of every layer hold what row beam_idx[i] held.

        beam_idx is a LongTensor of length batch. Later updates must see the reordered rows.
        """
        raise NotImplementedError
