"""One Llama decoder layer with a KV cache (llama-block-decode in shared/CONTRACT.md).

Llama (Touvron et al., arXiv:2302.13971) is a pre-norm transformer: each sub-layer reads an
RMSNorm of the residual stream and adds its output back onto the stream,

    h = x + attention(rmsnorm(x, attn_norm))
    y = h + mlp(rmsnorm(h, mlp_norm))

RMSNorm (Zhang & Sennrich, arXiv:1910.07467) divides each token's vector by its root mean square
over the last dimension, eps inside the root: x / sqrt(mean(x**2, -1) + eps) * w; no mean is
subtracted and there is no bias. The MLP is SwiGLU (Shazeer, arXiv:2002.05202):
(silu(z @ w_gate) * (z @ w_up)) @ w_down. Attention is GQA over the shared layout (H query heads,
H_kv key-value heads, query head i reads kv head i // (H // H_kv)) with RoPE
(graders/reference/rope.py, half-split pairs) on q and k at their positions; the head size hd is
w_q.shape[1] // H, which need not be d // H, and the scores are scaled by 1 / sqrt(hd). The cache
holds the H_kv heads of rotated keys and of values, (B, H_kv, S, hd), before any repeat.

Two paths, tested against each other (tests/graders/reference/test_llama.py):
- `llama_block_explicit` attends one query head at a time, reading its kv head by index;
- `llama_block` repeats the kv heads (repeat_kv) and attends all heads at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from graders.reference.attention import attend, merge_heads
from graders.reference.gqa import group_size, repeat_kv
from graders.reference.rope import apply_rope, cache_length

WEIGHT_NAMES = ("attn_norm", "w_q", "w_k", "w_v", "w_o", "mlp_norm", "w_gate", "w_up", "w_down")
DEFAULT_EPS = 1e-5


@dataclass(frozen=True)
class LlamaDims:
    d: int
    n_heads: int
    n_kv_heads: int
    hd: int
    f: int

    @classmethod
    def of(cls, weights: dict[str, torch.Tensor], n_heads: int, n_kv_heads: int) -> LlamaDims:
        """The sizes read from the weights' shapes; ValueError when H is not a multiple of H_kv or
        the shapes do not fit together."""
        group_size(n_heads, n_kv_heads)  # ValueError naming both counts
        missing = [name for name in WEIGHT_NAMES if name not in weights]
        if missing:
            raise ValueError(f"weights lacks {', '.join(missing)}")
        d, qw = weights["w_q"].shape
        if qw % n_heads:
            raise ValueError(f"w_q has {qw} columns, not a multiple of n_heads={n_heads}")
        hd, f = qw // n_heads, weights["w_gate"].shape[1]
        dims = cls(d, n_heads, n_kv_heads, hd, f)
        for name, shape in dims.shapes().items():
            if tuple(weights[name].shape) != shape:
                raise ValueError(f"{name} has shape {tuple(weights[name].shape)}, expected {shape}")
        return dims

    def shapes(self) -> dict[str, tuple[int, ...]]:
        d, f, q, kv = self.d, self.f, self.n_heads * self.hd, self.n_kv_heads * self.hd
        return {
            "attn_norm": (d,),
            "w_q": (d, q),
            "w_k": (d, kv),
            "w_v": (d, kv),
            "w_o": (q, d),
            "mlp_norm": (d,),
            "w_gate": (d, f),
            "w_up": (d, f),
            "w_down": (f, d),
        }


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float = DEFAULT_EPS) -> torch.Tensor:
    """x (..., d) / sqrt(mean(x**2 over d) + eps) * w (d,): each token by its own root mean square."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def swiglu(z: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """(silu(z @ w_gate) * (z @ w_up)) @ w_down: z (..., d) -> (..., d) through f hidden units."""
    return (F.silu(z @ w_gate) * (z @ w_up)) @ w_down


def project(
    z: torch.Tensor, weights: dict[str, torch.Tensor], dims: LlamaDims, positions: torch.Tensor, base: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The normed input z (B, T, d) -> q (B, H, T, hd) and k (B, H_kv, T, hd), both rotated, and v
    (B, H_kv, T, hd), never rotated."""
    B, T, _ = z.shape
    q = (z @ weights["w_q"]).view(B, T, dims.n_heads, dims.hd).transpose(1, 2)  # (B, H, T, hd)
    k = (z @ weights["w_k"]).view(B, T, dims.n_kv_heads, dims.hd).transpose(1, 2)  # (B, H_kv, T, hd)
    v = (z @ weights["w_v"]).view(B, T, dims.n_kv_heads, dims.hd).transpose(1, 2)  # (B, H_kv, T, hd)
    return apply_rope(q, positions, base), apply_rope(k, positions, base), v


def _extend(
    cache: dict[str, Any] | None, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    if cache:
        k = torch.cat([cache["k"], k], dim=-2)  # (B, H_kv, S, hd)
        v = torch.cat([cache["v"], v], dim=-2)  # (B, H_kv, S, hd)
    return k, v


def _block(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    n_kv_heads: int,
    cache: dict[str, Any] | None,
    base: float,
    eps: float,
    explicit: bool,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    dims = LlamaDims.of(weights, n_heads, n_kv_heads)
    B, T, _ = x.shape
    s_past = cache_length(cache)
    z = rmsnorm(x, weights["attn_norm"], eps)  # (B, T, d)
    q, k, v = project(z, weights, dims, torch.arange(s_past, s_past + T), base)
    k, v = _extend(cache, k, v)  # (B, H_kv, S, hd): the cache, before any repeat
    if explicit:
        o = _attend_per_head(q, k, v, n_heads // n_kv_heads)
    else:
        n_rep = n_heads // n_kv_heads
        o = attend(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep))  # (B, H, T, hd)
    h = x + merge_heads(o) @ weights["w_o"]  # (B, T, d): the first residual
    mlp = swiglu(rmsnorm(h, weights["mlp_norm"], eps), weights["w_gate"], weights["w_up"], weights["w_down"])
    return h + mlp, {"k": k, "v": v}


def _attend_per_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, group: int) -> torch.Tensor:
    """q (B, H, T, hd) over k, v (B, H_kv, S, hd): query head i reads kv head i // group, one head at
    a time; -> (B, H, T, hd)."""
    T, hd, S = q.shape[-2], q.shape[-1], k.shape[-2]
    visible = torch.ones(T, S, dtype=torch.bool).tril(S - T)  # query i, at position S - T + i
    heads = []
    for i in range(q.shape[1]):
        scores = q[:, i] @ k[:, i // group].transpose(-2, -1) / math.sqrt(hd)  # (B, T, S)
        probs = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
        heads.append(probs @ v[:, i // group])  # (B, T, hd)
    return torch.stack(heads, dim=1)  # (B, H, T, hd)


def llama_block(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    n_kv_heads: int,
    cache: dict[str, Any] | None = None,
    base: float = 10000.0,
    eps: float = DEFAULT_EPS,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """x (B, T, d), the next T tokens -> y (B, T, d) and the cache {"k" (rotated), "v"}, each
    (B, H_kv, S_past + T, hd). The kv heads repeated for all query heads at once."""
    return _block(x, weights, n_heads, n_kv_heads, cache, base, eps, explicit=False)


def llama_block_explicit(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    n_kv_heads: int,
    cache: dict[str, Any] | None = None,
    base: float = 10000.0,
    eps: float = DEFAULT_EPS,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The same layer, each query head attending over its own kv head by index."""
    return _block(x, weights, n_heads, n_kv_heads, cache, base, eps, explicit=True)


def random_weights(
    gen: torch.Generator, d: int, n_heads: int, n_kv_heads: int, hd: int, f: int
) -> dict[str, torch.Tensor]:
    """Weights of the contract's shapes, scaled so that every branch stays around unit size; the two
    norms' weights are drawn apart (around 1, never equal), so swapping them changes the output."""
    dims = LlamaDims(d, n_heads, n_kv_heads, hd, f)
    weights = {}
    for name, shape in dims.shapes().items():
        if len(shape) == 1:
            weights[name] = 0.5 + torch.rand(*shape, generator=gen)  # (d,) in [0.5, 1.5)
        else:
            weights[name] = torch.randn(*shape, generator=gen) / math.sqrt(shape[0])
    return weights
