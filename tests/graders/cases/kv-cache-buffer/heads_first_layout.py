# expect: passed
# A different layout inside (positions first) with transposed views handed out; reorder rebinds.
import torch


class KVCache:
    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        self.dims = dict(batch=batch, n_heads=n_heads, head_dim=head_dim, max_len=max_len)
        # (L, max_len, B, H, hd): a different storage order, still allocated once
        self.kv = torch.zeros(2, n_layers, max_len, batch, n_heads, head_dim, dtype=dtype, device=device)

    def update(self, layer, k, v, start):
        if k.shape != v.shape:
            raise ValueError(f"k.shape={tuple(k.shape)} != v.shape={tuple(v.shape)}")
        want = (self.dims["batch"], self.dims["n_heads"], self.dims["head_dim"])
        got = (k.shape[0], k.shape[1], k.shape[3])
        if got != want:
            raise ValueError(f"(batch, heads, head_dim) {got} does not match the cache's {want}")
        end = start + k.shape[2]
        if not 0 <= start <= end <= self.dims["max_len"]:
            raise ValueError(f"start={start}, end={end} outside 0..max_len={self.dims['max_len']}")
        self.kv[0, layer, start:end] = k.permute(2, 0, 1, 3)
        self.kv[1, layer, start:end] = v.permute(2, 0, 1, 3)
        return self.kv[0, layer, :end].permute(1, 2, 0, 3), self.kv[1, layer, :end].permute(1, 2, 0, 3)

    def reorder(self, beam_idx):
        self.kv = self.kv[:, :, :, beam_idx]
