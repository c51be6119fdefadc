# expect: failed
# diagnosis: bounds not checked: start + n > max_len must raise ValueError
# Never compares start + n with max_len.
import torch


class KVCache:
    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        self.batch, self.n_heads, self.max_len, self.head_dim = batch, n_heads, max_len, head_dim
        shape = (n_layers, batch, n_heads, max_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)

    def update(self, layer, k, v, start):
        if k.shape != v.shape:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")
        B, H, n, hd = k.shape
        if (B, H, hd) != (self.batch, self.n_heads, self.head_dim):
            raise ValueError(f"(B, H, hd)={(B, H, hd)} does not fit {(self.batch, self.n_heads, self.head_dim)}")
        if start < 0:
            raise ValueError(f"start={start} < 0")
        self.k[layer, :, :, start : start + n] = k
        self.v[layer, :, :, start : start + n] = v
        return self.k[layer, :, :, : start + n], self.v[layer, :, :, : start + n]

    def reorder(self, beam_idx):
        self.k = self.k[:, beam_idx]
        self.v = self.v[:, beam_idx]
