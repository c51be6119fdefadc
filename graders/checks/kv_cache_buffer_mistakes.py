"""kv-cache-buffer's known mistakes: the sentences the diagnosis names, and the reference's
known-wrong variants (graders.reference.kv_cache.KVCache with one mistake each) that the
battery (graders/checks/kv_cache_buffer.py) replays beside the submission to name them.
"""

from __future__ import annotations

from typing import Any

import torch

from graders.reference.kv_cache import KVCache

# Known mistakes, as they appear in report.diagnosis.
COPY = "update returns a copy, not a view"
AT_ZERO = "positions are written at 0 instead of start"
NEW_ONLY = "update returns only the new positions, not positions 0..start+n"
WHOLE_BUFFER = "update returns all max_len positions, not positions 0..start+n"
SHARED_LAYERS = "layers share one buffer: update ignores the layer index"
SWAPPED = "keys and values are swapped"
REORDER_DIM = "reorder gathers along the wrong dimension"
REORDER_SCATTER = "reorder scatters (row beam_idx[i] receives row i) instead of gathering"
REORDER_KEYS_ONLY = "reorder moves the keys but not the values"
REORDER_NOOP = "reorder has no effect on later updates"
REORDER_SOME_LAYERS = "reorder skips some layers"
BOUNDS = "bounds not checked: start + n > max_len must raise ValueError"
SHAPES = "shapes not checked: a batch, head count or head size that does not fit must raise ValueError"
KV_SHAPES = "k and v of different shapes must raise ValueError"
NEGATIVE_START = "a negative start is not rejected (a negative slice counts from the end of the buffer)"
OFF_BY_ONE = "off by one: filling a layer exactly to max_len (start + n == max_len) must be allowed"
KNOWN_MISTAKES = (
    COPY,
    AT_ZERO,
    NEW_ONLY,
    WHOLE_BUFFER,
    SHARED_LAYERS,
    SWAPPED,
    REORDER_DIM,
    REORDER_SCATTER,
    REORDER_KEYS_ONLY,
    REORDER_NOOP,
    REORDER_SOME_LAYERS,
    BOUNDS,
    SHAPES,
    KV_SHAPES,
    NEGATIVE_START,
    OFF_BY_ONE,
)


# Known-wrong variants of the reference, replayed beside it.


class WritesAtZero(KVCache):
    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> Any:
        n = self._check(layer, k, v, start)
        self.k[layer, :, :, :n], self.v[layer, :, :, :n] = k, v
        return self.k[layer, :, :, : start + n], self.v[layer, :, :, : start + n]


class ReturnsNewOnly(KVCache):
    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> Any:
        k_all, v_all = super().update(layer, k, v, start)
        return k_all[:, :, start:], v_all[:, :, start:]


class ReturnsWholeBuffer(KVCache):
    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> Any:
        super().update(layer, k, v, start)
        return self.k[layer], self.v[layer]


class SharedLayers(KVCache):
    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> Any:
        return super().update(0, k, v, start)


class Swapped(KVCache):
    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> Any:
        k_all, v_all = super().update(layer, k, v, start)
        return v_all, k_all


def gathering_along(dim: int) -> type[KVCache]:
    class _WrongDim(KVCache):
        def reorder(self, beam_idx: torch.Tensor) -> None:
            self.k.copy_(self.k.index_select(dim, beam_idx))
            self.v.copy_(self.v.index_select(dim, beam_idx))

    return _WrongDim


class Scatters(KVCache):
    def reorder(self, beam_idx: torch.Tensor) -> None:
        self.k[:, beam_idx] = self.k.clone()
        self.v[:, beam_idx] = self.v.clone()


class KeysOnly(KVCache):
    def reorder(self, beam_idx: torch.Tensor) -> None:
        self.k.copy_(self.k.index_select(1, beam_idx))


class NoReorder(KVCache):
    def reorder(self, beam_idx: torch.Tensor) -> None:
        pass


class FirstLayerOnly(KVCache):
    def reorder(self, beam_idx: torch.Tensor) -> None:
        self.k[0] = self.k[0].index_select(0, beam_idx)
        self.v[0] = self.v[0].index_select(0, beam_idx)


UPDATE_VARIANTS: dict[str, type[KVCache]] = {
    AT_ZERO: WritesAtZero,
    NEW_ONLY: ReturnsNewOnly,
    WHOLE_BUFFER: ReturnsWholeBuffer,
    SHARED_LAYERS: SharedLayers,
    SWAPPED: Swapped,
}
REORDER_VARIANTS: list[tuple[str, type[KVCache]]] = [
    (REORDER_DIM, gathering_along(0)),  # layers
    (REORDER_DIM, gathering_along(2)),  # heads
    (REORDER_DIM, gathering_along(3)),  # positions
    (REORDER_SCATTER, Scatters),
    (REORDER_KEYS_ONLY, KeysOnly),
    (REORDER_NOOP, NoReorder),
    (REORDER_SOME_LAYERS, FirstLayerOnly),
]
