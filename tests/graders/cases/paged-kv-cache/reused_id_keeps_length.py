# expect: failed
# diagnosis: a freed seq_id keeps its old length
# free drops the block table but not the length, so an id used again after free starts mid-sequence.
import math

import torch


class PagedKVCache:
    def __init__(self, n_blocks, block_size, n_heads, head_dim, dtype=torch.float32):
        self.block_size = block_size
        shape = (n_blocks, n_heads, block_size, head_dim)
        self.k_blocks = torch.zeros(shape, dtype=dtype)  # (n_blocks, H, block_size, hd), allocated once
        self.v_blocks = torch.zeros(shape, dtype=dtype)
        self.free_blocks = list(range(n_blocks))
        self.refcount = [0] * n_blocks  # how many sequences hold each block
        self.tables = {}  # seq_id -> block indices, in position order
        self.lengths = {}  # seq_id -> number of cached positions

    def num_free_blocks(self):
        return len(self.free_blocks)

    def block_table(self, seq_id):
        return list(self.tables[seq_id])  # KeyError for an unknown id

    def _allocate(self):
        block = self.free_blocks.pop()
        self.refcount[block] = 1
        return block

    def append(self, seq_id, k, v):
        H, n, hd = k.shape
        bs = self.block_size
        table = list(self.tables.get(seq_id, []))  # an unseen id starts empty
        length = self.lengths.get(seq_id, 0)

        # Work out every block this append needs before touching anything, so that a
        # MemoryError leaves the cache exactly as it was.
        new_blocks = -(-(length + n) // bs) - len(table)  # ceil((L + n) / bs) - held
        copy_last = n > 0 and length % bs != 0 and self.refcount[table[-1]] > 1
        if new_blocks + copy_last > len(self.free_blocks):
            raise MemoryError(
                f"{seq_id!r} needs {new_blocks + copy_last} blocks, {len(self.free_blocks)} are free"
            )

        if copy_last:
            # Copy-on-write: the last block is partly full and another sequence holds it too.
            # Writing into it would put our token into their sequence, so take a private copy.
            old, new = table[-1], self._allocate()
            self.k_blocks[new] = self.k_blocks[old]
            self.v_blocks[new] = self.v_blocks[old]
            self.refcount[old] -= 1
            table[-1] = new
        table += [self._allocate() for _ in range(new_blocks)]

        pos = length
        while pos < length + n:  # one slice per block touched
            block, slot = table[pos // bs], pos % bs
            take = min(bs - slot, length + n - pos)
            src = slice(pos - length, pos - length + take)
            self.k_blocks[block, :, slot : slot + take] = k[:, src]  # (H, take, hd)
            self.v_blocks[block, :, slot : slot + take] = v[:, src]
            pos += take
        self.tables[seq_id], self.lengths[seq_id] = table, length + n

    def gather(self, seq_id):
        table, length = self.tables[seq_id], self.lengths[seq_id]
        # Blocks in block-table order (not index order), slots concatenated, cut at L.
        k = torch.cat([self.k_blocks[b] for b in table], dim=1)[:, :length]  # (H, L, hd)
        v = torch.cat([self.v_blocks[b] for b in table], dim=1)[:, :length]  # (H, L, hd)
        return k, v

    def fork(self, src_id, dst_id):
        table = self.tables[src_id]
        for block in table:  # share, don't copy: one more holder per block
            self.refcount[block] += 1
        self.tables[dst_id], self.lengths[dst_id] = list(table), self.lengths[src_id]

    def free(self, seq_id):
        table = self.tables.pop(seq_id)  # the length stays behind: a reused id continues from it
        for block in table:
            self.refcount[block] -= 1
            if self.refcount[block] == 0:  # only blocks nobody else holds go back
                self.free_blocks.append(block)


def paged_attention(q, cache, seq_ids):
    """q (B, H, 1, hd), one query per sequence -> (B, H, 1, hd)."""
    hd = q.shape[-1]
    out = []
    for b, seq_id in enumerate(seq_ids):
        k, v = cache.gather(seq_id)  # (H, L, hd): only the L written slots, no stale ones
        scores = q[b] @ k.transpose(-2, -1) / math.sqrt(hd)  # (H, 1, L)
        out.append(torch.softmax(scores, dim=-1) @ v)  # (H, 1, hd)
    return torch.stack(out)  # (B, H, 1, hd)
