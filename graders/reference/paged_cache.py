"""A paged KV cache: fixed-size blocks, block tables, fork with copy-on-write (paged-kv-cache).

The storage is two tensors of shape (n_blocks, n_heads, block_size, head_dim), allocated once.
A sequence is a block table (the indices of its blocks, in position order) and a length L;
it holds exactly ceil(L / block_size) blocks, so at most block_size - 1 slots per sequence
are unused, against T_max - L for a contiguous reservation (Kwon et al. 2023, "Efficient
Memory Management for Large Language Model Serving with PagedAttention").

Blocks are reference-counted. `fork` shares every block of a sequence (prefix sharing,
parallel sampling, beam search); an append into a last block that another sequence also
holds, and that is only partly full, first copies it (copy-on-write). `free` drops one
holder and returns a block to the free list only when nobody holds it any more.

`paged_attention` attends one query per sequence over its cached positions by gathering
through the block table (`attend_gathered`, the explicit path) or by indexing the block
storage for the whole batch at once with a length mask (`attend_batched`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import torch


def blocks_for(length: int, block_size: int) -> int:
    return -(-length // block_size)  # ceil(length / block_size)


class PagedKVCache:
    def __init__(
        self, n_blocks: int, block_size: int, n_heads: int, head_dim: int, dtype: torch.dtype = torch.float32
    ) -> None:
        self.block_size = block_size
        shape = (n_blocks, n_heads, block_size, head_dim)
        self.k_blocks = torch.zeros(shape, dtype=dtype)  # (n_blocks, H, block_size, hd)
        self.v_blocks = torch.zeros(shape, dtype=dtype)
        self.free_list = list(range(n_blocks))
        self.refcount = [0] * n_blocks
        self.tables: dict[Hashable, list[int]] = {}
        self.lengths: dict[Hashable, int] = {}

    def num_free_blocks(self) -> int:
        return len(self.free_list)

    def block_table(self, seq_id: Hashable) -> list[int]:
        return list(self.tables[seq_id])

    def _take(self) -> int:
        block = self.free_list.pop(0)
        self.refcount[block] = 1
        return block

    def append(self, seq_id: Hashable, k: torch.Tensor, v: torch.Tensor) -> None:
        """k, v (H, n, hd): the next n positions of seq_id."""
        n = k.shape[1]
        table = self.tables.get(seq_id, [])
        length = self.lengths.get(seq_id, 0)
        bs = self.block_size
        new_blocks = blocks_for(length + n, bs) - len(table)
        shared_partial = length % bs != 0 and self.refcount[table[-1]] > 1
        needed = new_blocks + (1 if shared_partial and n > 0 else 0)
        if needed > len(self.free_list):
            raise MemoryError(
                f"sequence {seq_id!r} needs {needed} more blocks for {n} tokens, "
                f"{len(self.free_list)} are free"
            )
        table = list(table)
        if shared_partial and n > 0:  # copy-on-write: the other holders keep the original
            old, copy = table[-1], self._take()
            self.k_blocks[copy], self.v_blocks[copy] = self.k_blocks[old], self.v_blocks[old]
            self.refcount[old] -= 1
            table[-1] = copy
        table += [self._take() for _ in range(new_blocks)]
        pos = length
        while pos < length + n:  # one slice per block: from pos to the block's end or the last token
            block, slot = table[pos // bs], pos % bs
            take = min(bs - slot, length + n - pos)
            self.k_blocks[block, :, slot : slot + take] = k[
                :, pos - length : pos - length + take
            ]  # (H, take, hd)
            self.v_blocks[block, :, slot : slot + take] = v[:, pos - length : pos - length + take]
            pos += take
        self.tables[seq_id], self.lengths[seq_id] = table, length + n

    def gather(self, seq_id: Hashable) -> tuple[torch.Tensor, torch.Tensor]:
        """(k, v), each (H, L, hd), in position order."""
        table, length = self.tables[seq_id], self.lengths[seq_id]
        H, hd = self.k_blocks.shape[1], self.k_blocks.shape[3]
        idx = torch.tensor(table, dtype=torch.int64)
        k = self.k_blocks[idx].transpose(0, 1).reshape(H, -1, hd)[:, :length]  # (H, L, hd)
        v = self.v_blocks[idx].transpose(0, 1).reshape(H, -1, hd)[:, :length]  # (H, L, hd)
        return k, v

    def fork(self, src_id: Hashable, dst_id: Hashable) -> None:
        table = self.tables[src_id]
        for block in table:
            self.refcount[block] += 1
        self.tables[dst_id], self.lengths[dst_id] = list(table), self.lengths[src_id]

    def free(self, seq_id: Hashable) -> None:
        table = self.tables.pop(seq_id)
        del self.lengths[seq_id]
        for block in table:
            self.refcount[block] -= 1
            if self.refcount[block] == 0:
                self.free_list.append(block)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """q (H, 1, hd) over k, v (H, L, hd), no mask -> (H, 1, hd)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (H, 1, L)
    return torch.softmax(scores, dim=-1) @ v


def attend_gathered(q: torch.Tensor, cache: PagedKVCache, seq_ids: Sequence[Hashable]) -> torch.Tensor:
    """The explicit path. q (B, H, 1, hd) -> (B, H, 1, hd), one sequence per row."""
    return torch.stack([attention(q[b], *cache.gather(s)) for b, s in enumerate(seq_ids)])


def attend_batched(q: torch.Tensor, cache: PagedKVCache, seq_ids: Sequence[Hashable]) -> torch.Tensor:
    """The batched path: pad every block table to the longest, index the storage once, mask by length."""
    B, H, _, hd = q.shape
    bs = cache.block_size
    tables = [cache.tables[s] for s in seq_ids]
    width = max(len(t) for t in tables)
    padded = torch.tensor([t + [t[0]] * (width - len(t)) for t in tables])  # (B, width)
    k = cache.k_blocks[padded]  # (B, width, H, bs, hd)
    v = cache.v_blocks[padded]
    k = k.permute(0, 2, 1, 3, 4).reshape(B, H, width * bs, hd)  # (B, H, S, hd), S = width * bs
    v = v.permute(0, 2, 1, 3, 4).reshape(B, H, width * bs, hd)
    lengths = torch.tensor([cache.lengths[s] for s in seq_ids])  # (B,)
    visible = torch.arange(width * bs) < lengths[:, None]  # (B, S): no stale slot, no padding
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)  # (B, H, 1, S)
    scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # (B, H, 1, hd)


paged_attention = attend_batched
