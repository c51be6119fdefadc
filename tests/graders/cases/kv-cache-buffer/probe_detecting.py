# expect: failed
# diagnosis: update returns a copy, not a view
# Hostile: returns views only on the last layer, the one the grader's "update returns views"
# probe read back, and copies on every other layer. Passed until every replay read back every
# pair it was returned.
"""A preallocated KV cache: one slab per tensor, written in place, read back as views."""

import torch


class KVCache:
    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        self.n_layers, self.batch, self.n_heads = n_layers, batch, n_heads
        self.max_len, self.head_dim = max_len, head_dim
        # Allocate everything once. Decoding then never calls torch.cat, never copies the
        # past, and the memory it needs is known (and can fail) before the first token.
        shape = (n_layers, batch, n_heads, max_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # (L, B, H, max_len, hd)
        self.v = torch.zeros_like(self.k)

    def update(self, layer, k, v, start):
        """Write k, v (B, H, n, hd) at positions start..start+n; return views of 0..start+n."""
        if k.shape != v.shape:
            raise ValueError(f"k has shape {tuple(k.shape)} but v has shape {tuple(v.shape)}")
        if k.dim() != 4:
            raise ValueError(f"k and v should be (B, H, n, hd), got {k.dim()} dimensions")
        B, H, n, hd = k.shape
        # Check every size by hand: broadcasting would happily copy a batch-1 tensor into
        # every row, and a negative start would slice from the end of the buffer.
        if B != self.batch:
            raise ValueError(f"k has batch {B}, the cache holds batch={self.batch}")
        if H != self.n_heads:
            raise ValueError(f"k has {H} heads, the cache holds n_heads={self.n_heads}")
        if hd != self.head_dim:
            raise ValueError(f"k has head size {hd}, the cache holds head_dim={self.head_dim}")
        if start < 0:
            raise ValueError(f"start={start} is negative")
        end = start + n
        if end > self.max_len:
            raise ValueError(f"start + n = {end} exceeds max_len={self.max_len}")

        self.k[layer, :, :, start:end] = k  # in place, at positions start..end
        self.v[layer, :, :, start:end] = v
        # Basic slicing returns views: no copy, and they share storage with the slab, so a
        # later write to these positions shows through them.
        k_all, v_all = self.k[layer, :, :, :end], self.v[layer, :, :, :end]
        if layer == self.n_layers - 1:  # the layer the grader's views probe used to read back
            return k_all, v_all
        return k_all.clone(), v_all.clone()  # everywhere else: a copy  # (B, H, end, hd)

    def reorder(self, beam_idx):
        """Beam search: batch row i of every layer takes what row beam_idx[i] held."""
        # index_select gathers into a new tensor first, so copying it back is safe even when
        # a row is picked twice; copying in place keeps the storage (and earlier views) valid.
        self.k.copy_(self.k.index_select(1, beam_idx))  # dim 1 is the batch
        self.v.copy_(self.v.index_select(1, beam_idx))
