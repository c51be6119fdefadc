"""A KV cache of fixed size that keeps the first n_sink tokens and the last `window` ones.

Mistral 7B (Jiang et al., arXiv:2310.06825) attends over a sliding window and keeps its
cache as a *rolling buffer*: position p is written to slot p mod window, so the storage
is allocated once and never grows. StreamingLLM (Xiao et al., arXiv:2309.17453) found
that dropping the very first tokens wrecks a model that attends heavily to them
("attention sinks") and keeps n_sink of them besides the window.

Storage: (B, H, n_sink + window, hd) for keys and for values, allocated once. Position p
goes to slot p when p < n_sink, else to slot n_sink + (p - n_sink) mod window. After
t tokens the kept positions are 0 .. min(t, n_sink) - 1 and the last
min(t - n_sink, window) of the rest; `update` returns them in position order.

`SlidingWindowCache` is the ring buffer; `ListWindowCache` keeps every token in a list
and picks the kept ones out (the explicit path, for testing the ring against).
"""

from __future__ import annotations

import torch


def kept_positions(seen: int, window: int, n_sink: int) -> torch.Tensor:
    """The absolute positions a cache keeps after `seen` tokens, in order, (K,) int64."""
    sinks = torch.arange(min(seen, n_sink))
    recent = torch.arange(min(seen, max(n_sink, seen - window)), seen)
    return torch.cat([sinks, recent])  # (K,), K = min(seen, n_sink + window)


def _check_dims(window: int, n_sink: int) -> None:
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    if n_sink < 0:
        raise ValueError(f"n_sink must be at least 0, got {n_sink}")


class SlidingWindowCache:
    """The ring buffer: sinks in slots 0..n_sink-1, the window rolling through the rest."""

    def __init__(
        self,
        window: int,
        n_sink: int,
        batch: int,
        n_heads: int,
        head_dim: int,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        _check_dims(window, n_sink)
        self.window, self.n_sink = window, n_sink
        self.k = torch.zeros(
            batch, n_heads, n_sink + window, head_dim, dtype=dtype
        )  # (B, H, n_sink + window, hd)
        self.v = torch.zeros_like(self.k)
        self.seen = 0  # tokens written so far: the next token's position

    def slot(self, positions: torch.Tensor) -> torch.Tensor:
        """Where each absolute position lives, (n,) -> (n,)."""
        ring = self.n_sink + (positions - self.n_sink) % self.window
        return torch.where(positions < self.n_sink, positions, ring)

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """k, v (B, H, n, hd), the next n tokens -> kept k, v (B, H, K, hd) in order, positions (K,)."""
        n = k.shape[-2]
        positions = torch.arange(self.seen, self.seen + n)  # (n,)
        self.seen += n
        # Only tokens that survive this update are written, so a slot is written at most once
        # (a prefill longer than the window would otherwise write a slot twice in one copy).
        survives = (positions < self.n_sink) | (positions >= self.seen - self.window)  # (n,)
        slots = self.slot(positions[survives])  # (n_kept,)
        self.k[:, :, slots] = k[:, :, survives]  # in place: the storage never moves
        self.v[:, :, slots] = v[:, :, survives]
        kept = kept_positions(self.seen, self.window, self.n_sink)  # (K,)
        order = self.slot(kept)  # (K,) slots in position order
        return self.k[:, :, order], self.v[:, :, order], kept  # (B, H, K, hd) each


class ListWindowCache:
    """The explicit path: every token kept in a list, the kept ones picked out on each update."""

    def __init__(self, window: int, n_sink: int) -> None:
        _check_dims(window, n_sink)
        self.window, self.n_sink = window, n_sink
        self.ks: list[torch.Tensor] = []  # each (B, H, 1, hd)
        self.vs: list[torch.Tensor] = []

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self.ks += list(k.split(1, dim=-2))
        self.vs += list(v.split(1, dim=-2))
        kept = kept_positions(len(self.ks), self.window, self.n_sink)  # (K,)
        keys = torch.cat([self.ks[p] for p in kept.tolist()], dim=-2)  # (B, H, K, hd)
        values = torch.cat([self.vs[p] for p in kept.tolist()], dim=-2)  # (B, H, K, hd)
        return keys, values, kept
