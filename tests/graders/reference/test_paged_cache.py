"""The reference paged cache: block counts, copy-on-write, free, and both attention paths."""

from __future__ import annotations

import pytest
import torch

from graders.reference.paged_cache import PagedKVCache, attend_batched, attend_gathered

H, HD, BS = 2, 3, 4


def kv(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(H, n, HD, generator=gen), torch.randn(H, n, HD, generator=gen)


def test_a_sequence_holds_ceil_l_over_block_size_blocks_and_gathers_in_order() -> None:
    cache = PagedKVCache(8, BS, H, HD)
    k1, v1 = kv(6, 0)
    k2, v2 = kv(2, 1)
    cache.append("a", k1, v1)
    assert cache.num_free_blocks() == 6
    cache.append("a", k2, v2)  # exactly 8 = 2 blocks
    assert cache.num_free_blocks() == 6 and len(cache.block_table("a")) == 2
    k, v = cache.gather("a")
    assert torch.equal(k, torch.cat([k1, k2], 1)) and torch.equal(v, torch.cat([v1, v2], 1))


def test_running_out_raises_memory_error_and_changes_nothing() -> None:
    cache = PagedKVCache(2, BS, H, HD)
    cache.append(1, *kv(5, 0))
    before = cache.gather(1), cache.block_table(1)
    with pytest.raises(MemoryError):
        cache.append(1, *kv(4, 1))
    assert cache.num_free_blocks() == 0 and cache.block_table(1) == before[1]
    assert torch.equal(cache.gather(1)[0], before[0][0])


def test_fork_shares_and_copy_on_write_goes_both_ways() -> None:
    cache = PagedKVCache(6, BS, H, HD)
    k0, v0 = kv(5, 0)
    cache.append("src", k0, v0)
    cache.fork("src", "dst")
    assert cache.num_free_blocks() == 4 and cache.block_table("dst") == cache.block_table("src")
    ka, va = kv(1, 1)
    kb, vb = kv(1, 2)
    cache.append("dst", ka, va)  # copies the shared partial block
    assert cache.num_free_blocks() == 3
    cache.append("src", kb, vb)  # its block is no longer shared: written in place
    assert cache.num_free_blocks() == 3
    assert torch.equal(cache.gather("dst")[0], torch.cat([k0, ka], 1))
    assert torch.equal(cache.gather("src")[0], torch.cat([k0, kb], 1))
    cache.free("src")
    assert cache.num_free_blocks() == 4  # the first block is still dst's
    assert torch.equal(cache.gather("dst")[1], torch.cat([v0, va], 1))


def test_the_gathered_and_batched_attention_agree_over_different_lengths() -> None:
    cache = PagedKVCache(10, BS, H, HD)
    for seq, n in ((3, 9), (1, 4), (2, 1)):
        cache.append(seq, *kv(n, seq))
    cache.free(1)
    cache.append(4, *kv(3, 9))  # reuses a freed block: its stale slot 3 must not be read
    q = torch.randn(3, H, 1, HD)
    assert torch.allclose(
        attend_batched(q, cache, [3, 4, 2]), attend_gathered(q, cache, [3, 4, 2]), atol=1e-6
    )
