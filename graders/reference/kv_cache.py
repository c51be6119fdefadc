"""A preallocated, per-layer KV cache with beam-search reordering (the kv-cache-buffer challenge).

Storage is allocated once, as one keys tensor and one values tensor of shape
(n_layers, batch, n_heads, max_len, head_dim). `update` writes new positions in
place and hands back views of everything written so far, so decoding never
copies the cache and never grows it.
"""

from __future__ import annotations

import torch


class KVCache:
    def __init__(
        self,
        n_layers: int,
        batch: int,
        n_heads: int,
        max_len: int,
        head_dim: int,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> None:
        self.n_layers, self.batch, self.n_heads = n_layers, batch, n_heads
        self.max_len, self.head_dim = max_len, head_dim
        shape = (n_layers, batch, n_heads, max_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # (L, B, H, max_len, hd)
        self.v = torch.zeros_like(self.k)  # (L, B, H, max_len, hd)

    def _check(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> int:
        """Validate one update and return n, the number of new positions."""
        if not 0 <= layer < self.n_layers:
            raise ValueError(f"layer={layer} is outside 0..{self.n_layers - 1}")
        if k.shape != v.shape:
            raise ValueError(f"k has shape {tuple(k.shape)} but v has shape {tuple(v.shape)}")
        if k.dim() != 4:
            raise ValueError(f"k and v should be (B, H, n, hd), got {k.dim()} dimensions")
        B, H, n, hd = k.shape
        if B != self.batch:
            raise ValueError(f"k has batch {B}, the cache was built for batch={self.batch}")
        if H != self.n_heads:
            raise ValueError(f"k has {H} heads, the cache was built for n_heads={self.n_heads}")
        if hd != self.head_dim:
            raise ValueError(f"k has head size {hd}, the cache was built for head_dim={self.head_dim}")
        if start < 0:
            raise ValueError(f"start={start} is negative")
        if start + n > self.max_len:
            raise ValueError(f"start + n = {start} + {n} = {start + n} exceeds max_len={self.max_len}")
        return n

    def update(
        self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write k, v (B, H, n, hd) at positions start..start+n; return views of positions 0..start+n."""
        n = self._check(layer, k, v, start)
        end = start + n
        self.k[layer, :, :, start:end] = k  # (B, H, n, hd) into the preallocated slab
        self.v[layer, :, :, start:end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]  # (B, H, end, hd), views

    def reorder(self, beam_idx: torch.Tensor) -> None:
        """Beam search: batch row i of every layer now holds what row beam_idx[i] held."""
        if beam_idx.shape != (self.batch,):
            raise ValueError(f"beam_idx has shape {tuple(beam_idx.shape)}, expected ({self.batch},)")
        beam_idx = beam_idx.to(self.k.device)
        # index_select makes a gathered copy first, so writing it back in place is safe even
        # when rows repeat; the storage (and views handed out earlier) stays the same.
        self.k.copy_(self.k.index_select(1, beam_idx))  # (L, B, H, max_len, hd)
        self.v.copy_(self.v.index_select(1, beam_idx))
