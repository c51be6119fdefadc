# expect: failed
# diagnosis: update returns a copy, not a view
# The naive cache: grows each layer with torch.cat, so every update copies the whole past.
import torch


class KVCache:
    def __init__(self, n_layers, batch, n_heads, max_len, head_dim, dtype=torch.float32, device="cpu"):
        self.max_len, self.dims = max_len, (batch, n_heads, head_dim)
        self.k = [None] * n_layers
        self.v = [None] * n_layers

    def update(self, layer, k, v, start):
        if k.shape != v.shape or (k.shape[0], k.shape[1], k.shape[3]) != self.dims:
            raise ValueError(f"shapes {tuple(k.shape)} / {tuple(v.shape)} do not fit {self.dims}")
        if start < 0 or start + k.shape[2] > self.max_len:
            raise ValueError(f"start={start} + n={k.shape[2]} outside max_len={self.max_len}")
        if self.k[layer] is None or start == 0:
            self.k[layer], self.v[layer] = k, v
        else:
            self.k[layer] = torch.cat([self.k[layer][:, :, :start], k], dim=2)
            self.v[layer] = torch.cat([self.v[layer][:, :, :start], v], dim=2)
        return self.k[layer], self.v[layer]

    def reorder(self, beam_idx):
        self.k = [None if t is None else t[beam_idx] for t in self.k]
        self.v = [None if t is None else t[beam_idx] for t in self.v]
