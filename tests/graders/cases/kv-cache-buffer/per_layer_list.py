# expect: passed
# A different style: one tensor per layer in a list, reorder by rebinding each layer's tensors.
import torch


class KVCache:
    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        self.shape = (batch, n_heads, max_len, head_dim)
        self.keys = [torch.empty(self.shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.values = [torch.empty(self.shape, dtype=dtype, device=device) for _ in range(n_layers)]

    def update(self, layer, k, v, start):
        batch, heads, max_len, head_dim = self.shape
        if tuple(k.shape) != tuple(v.shape):
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")
        b, h, n, d = k.shape
        if (b, h, d) != (batch, heads, head_dim):
            raise ValueError(f"got (B, H, hd) = {(b, h, d)}, cache has {(batch, heads, head_dim)}")
        if start < 0 or start + n > max_len:
            raise ValueError(f"positions {start}..{start + n} do not fit in max_len={max_len}")
        self.keys[layer][:, :, start : start + n].copy_(k)
        self.values[layer][:, :, start : start + n].copy_(v)
        return self.keys[layer].narrow(2, 0, start + n), self.values[layer].narrow(2, 0, start + n)

    def reorder(self, beam_idx):
        self.keys = [t[beam_idx] for t in self.keys]
        self.values = [t[beam_idx] for t in self.values]
