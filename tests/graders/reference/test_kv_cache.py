"""The reference KVCache: preallocated views, validation, beam-search reordering."""

from __future__ import annotations

import pytest
import torch

from graders.reference.kv_cache import KVCache

L, B, H, T_MAX, HD = 3, 2, 4, 10, 8


def _kv(n: int, batch: int = B, heads: int = H, hd: int = HD) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, heads, n, hd), torch.randn(batch, heads, n, hd)


def test_prefill_then_decode_matches_concatenation_on_every_layer() -> None:
    torch.manual_seed(0)
    cache = KVCache(L, B, H, T_MAX, HD)
    grown = [_kv(5) for _ in range(L)]  # what a torch.cat cache would hold
    for layer, (k, v) in enumerate(grown):
        k_all, v_all = cache.update(layer, k, v, 0)
        assert torch.equal(k_all, k) and torch.equal(v_all, v)
    for start in range(5, 8):
        for layer in range(L):
            k, v = _kv(1)
            k_all, v_all = cache.update(layer, k, v, start)
            grown[layer] = (torch.cat([grown[layer][0], k], dim=2), torch.cat([grown[layer][1], v], dim=2))
            assert k_all.shape == (B, H, start + 1, HD)
            assert torch.equal(k_all, grown[layer][0]) and torch.equal(v_all, grown[layer][1])


def test_update_returns_views_of_one_preallocated_buffer() -> None:
    cache = KVCache(L, B, H, T_MAX, HD)
    k_first, _ = cache.update(1, *_kv(4), 0)
    k_second, _ = cache.update(1, *_kv(1), 4)
    assert k_first.data_ptr() == k_second.data_ptr() == cache.k[1].data_ptr()
    k_new, v_new = _kv(2)
    cache.update(1, k_new, v_new, 0)
    assert torch.equal(k_first[:, :, :2], k_new)  # the earlier view sees the overwrite
    assert cache.k.shape == (L, B, H, T_MAX, HD)


def test_a_layer_fills_exactly_to_max_len() -> None:
    cache = KVCache(L, B, H, T_MAX, HD)
    cache.update(0, *_kv(T_MAX - 1), 0)
    k_all, v_all = cache.update(0, *_kv(1), T_MAX - 1)
    assert k_all.shape == v_all.shape == (B, H, T_MAX, HD)


@pytest.mark.parametrize(
    ("k_shape", "v_shape", "start", "names"),
    [
        ((B, H, 3, HD), (B, H, 3, HD), T_MAX - 2, ["11", "max_len=10"]),
        ((B + 1, H, 1, HD), (B + 1, H, 1, HD), 0, ["3", "batch=2"]),
        ((B, H - 1, 1, HD), (B, H - 1, 1, HD), 0, ["3", "n_heads=4"]),
        ((B, H, 1, HD * 2), (B, H, 1, HD * 2), 0, ["16", "head_dim=8"]),
        ((B, H, 2, HD), (B, H, 1, HD), 0, ["(2, 4, 2, 8)", "(2, 4, 1, 8)"]),
        ((B, H, 1, HD), (B, H, 1, HD), -1, ["start=-1"]),
    ],
    ids=["overflow", "batch", "heads", "head-size", "k-v-differ", "negative-start"],
)
def test_shapes_that_do_not_fit_raise_value_error_naming_the_values(
    k_shape: tuple[int, ...], v_shape: tuple[int, ...], start: int, names: list[str]
) -> None:
    cache = KVCache(L, B, H, T_MAX, HD)
    with pytest.raises(ValueError) as info:
        cache.update(0, torch.randn(k_shape), torch.randn(v_shape), start)
    for name in names:
        assert name in str(info.value)


def test_reorder_gathers_batch_rows_on_every_layer_in_place() -> None:
    torch.manual_seed(1)
    batch = 3
    cache = KVCache(L, batch, H, T_MAX, HD)
    before = [cache.update(layer, *_kv(4, batch=batch), 0) for layer in range(L)]
    snapshot = [(k.clone(), v.clone()) for k, v in before]
    beam_idx = torch.tensor([2, 2, 0])
    cache.reorder(beam_idx)
    for layer in range(L):
        k_new, v_new = _kv(1, batch=batch)
        k_all, v_all = cache.update(layer, k_new, v_new, 4)
        assert torch.equal(k_all[:, :, :4], snapshot[layer][0][beam_idx])
        assert torch.equal(v_all[:, :, :4], snapshot[layer][1][beam_idx])
        assert torch.equal(k_all[:, :, 4:], k_new)
        assert torch.equal(before[layer][0], k_all[:, :, :4])  # in place: old views follow


def test_layers_are_independent() -> None:
    cache = KVCache(L, B, H, T_MAX, HD)
    k0, v0 = _kv(3)
    cache.update(0, k0, v0, 0)
    cache.update(2, *_kv(3), 0)
    k_all, v_all = cache.update(0, *_kv(1), 3)
    assert torch.equal(k_all[:, :, :3], k0) and torch.equal(v_all[:, :, :3], v0)
    assert torch.count_nonzero(cache.k[1]) == 0


def test_dtype_and_device_are_honoured() -> None:
    cache = KVCache(1, 1, 1, 4, 2, dtype=torch.float64, device="cpu")
    k_all, _ = cache.update(0, torch.ones(1, 1, 2, 2, dtype=torch.float64), torch.ones(1, 1, 2, 2), 0)
    assert k_all.dtype == torch.float64 and k_all.device.type == "cpu"
