import math

import torch


class PagedKVCache:
    def __init__(self, n_blocks, block_size, n_heads, head_dim, dtype=torch.float32):
        """Allocate self.k_blocks and self.v_blocks, (n_blocks, n_heads, block_size, head_dim), once."""
        raise NotImplementedError

    def append(self, seq_id, k, v):
        """k, v (n_heads, n, head_dim): the next n positions. MemoryError (and no change) when full."""
        raise NotImplementedError

    def block_table(self, seq_id):
        raise NotImplementedError

    def gather(self, seq_id):
        """(k, v), each (n_heads, L, head_dim), in position order."""
        raise NotImplementedError

    def fork(self, src_id, dst_id):
        raise NotImplementedError

    def free(self, seq_id):
        raise NotImplementedError

    def num_free_blocks(self):
        raise NotImplementedError


def paged_attention(q, cache, seq_ids):
    """q (B, n_heads, 1, head_dim), one query per sequence -> (B, n_heads, 1, head_dim)."""
    raise NotImplementedError
