"""Multi-head latent attention with decoupled RoPE (mla-decode in shared/CONTRACT.md).

DeepSeek-V2 (arXiv:2405.04434, section 2.1) caches, per token, one latent c = x @ w_dkv of width
d_c and one RoPE key k_rope = rope(x @ w_kr) of width d_rope shared by every head, instead of
per-head keys and values. Head h's key for cached position j is [c_j @ w_uk[h], k_rope_j] and its
value c_j @ w_uv[h]; its query is [q_nope[h], rope(q_rope[h])]; scores are scaled by
1 / sqrt(d_nope + d_rope), the width of the key that head sees.

Two paths, tested against each other (tests/graders/reference/test_mla.py):
- `mla_attention_explicit` reads the formulas literally: it rebuilds every head's keys and values
  for every cached position, (B, H, S, d_nope) and (B, H, S, d_v), one head at a time;
- `mla_attention` absorbs the up-projections (the paper's "absorbed into W_Q and W_O"):
  q_nope[h] . (c_j @ w_uk[h]) = (q_nope[h] @ w_uk[h].T) . c_j, so each head scores the latent
  directly with a query of width d_c, and sum_j p_j (c_j @ w_uv[h]) = (sum_j p_j c_j) @ w_uv[h],
  so the softmax weights the latent and w_uv is applied once per query. Its largest tensors are
  the scores (B, H, T, S) and the latent cache: at decode (T = 1) nothing of size
  B * H * S * min(d_nope, d_v) is built, the contract's absorption rule.

Both take the sizes from the weights' shapes (`MLADims.of`). RoPE is graders/reference/rope.py's
half-split rotation with hd = d_rope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from graders.reference.rope import apply_rope

WEIGHT_NAMES = ("w_q", "w_dkv", "w_kr", "w_uk", "w_uv", "w_o")


@dataclass(frozen=True)
class MLADims:
    d: int
    n_heads: int
    d_nope: int
    d_rope: int
    d_c: int
    d_v: int

    @classmethod
    def of(cls, weights: dict[str, torch.Tensor], n_heads: int) -> MLADims:
        """The sizes read from the weights' shapes; ValueError when they do not fit together."""
        missing = [name for name in WEIGHT_NAMES if name not in weights]
        if missing:
            raise ValueError(f"weights lacks {', '.join(missing)}")
        d, qk = weights["w_q"].shape
        d_c, d_rope = weights["w_dkv"].shape[1], weights["w_kr"].shape[1]
        H, d_c_uk, d_nope = weights["w_uk"].shape
        d_v = weights["w_uv"].shape[2]
        if H != n_heads or qk != n_heads * (d_nope + d_rope) or d_c_uk != d_c:
            raise ValueError(
                f"w_q {tuple(weights['w_q'].shape)} and w_uk {tuple(weights['w_uk'].shape)} do not fit "
                f"n_heads={n_heads}, d_rope={d_rope}, d_c={d_c}"
            )
        if tuple(weights["w_o"].shape) != (n_heads * d_v, d):
            raise ValueError(f"w_o has shape {tuple(weights['w_o'].shape)}, expected {(n_heads * d_v, d)}")
        return cls(d, n_heads, d_nope, d_rope, d_c, d_v)

    @property
    def per_head_size(self) -> int:
        """min(d_nope, d_v): per-head keys or values hold B * H * S times this."""
        return min(self.d_nope, self.d_v)


def latent_length(cache: dict[str, Any] | None) -> int:
    """S_past: the positions in a latent cache (0 for None or an empty dict)."""
    return 0 if not cache else int(cache["c"].shape[1])


def project(
    x: torch.Tensor, weights: dict[str, torch.Tensor], dims: MLADims, positions: torch.Tensor, base: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (B, T, d) at `positions` (T,) -> q_nope (B, H, T, d_nope), q_rope (B, H, T, d_rope) rotated,
    c (B, T, d_c), k_rope (B, T, d_rope) rotated: everything a call makes from its new tokens."""
    B, T, _ = x.shape
    q = (x @ weights["w_q"]).view(B, T, dims.n_heads, dims.d_nope + dims.d_rope).transpose(1, 2)
    q_nope, q_rope = q[..., : dims.d_nope], apply_rope(q[..., dims.d_nope :], positions, base)
    c = x @ weights["w_dkv"]  # (B, T, d_c)
    k_rope = apply_rope((x @ weights["w_kr"])[:, None], positions, base)[:, 0]  # one head: (B, T, d_rope)
    return q_nope, q_rope, c, k_rope


def _extend(
    cache: dict[str, Any] | None, c: torch.Tensor, k_rope: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    if cache:
        c = torch.cat([cache["c"], c], dim=1)  # (B, S, d_c)
        k_rope = torch.cat([cache["k_rope"], k_rope], dim=1)  # (B, S, d_rope)
    return c, k_rope


def _causal(T: int, S: int) -> torch.Tensor:
    """(T, S) bool: new query i, at position S - T + i, sees keys 0 .. S - T + i."""
    return torch.ones(T, S, dtype=torch.bool).tril(S - T)


def mla_attention(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    cache: dict[str, Any] | None = None,
    base: float = 10000.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """x (B, T, d), the next T tokens -> y (B, T, d) and the cache {"c", "k_rope"} of S_past + T.
    Absorbed: no per-head key or value of a cached position is built."""
    dims = MLADims.of(weights, n_heads)
    B, T, _ = x.shape
    s_past = latent_length(cache)
    q_nope, q_rope, c_new, kr_new = project(x, weights, dims, torch.arange(s_past, s_past + T), base)
    c, k_rope = _extend(cache, c_new, kr_new)  # (B, S, d_c), (B, S, d_rope)
    q_latent = torch.einsum("bhtn,hcn->bhtc", q_nope, weights["w_uk"])  # (B, H, T, d_c)
    # einsum folds (H, T) into the rows of one product per batch row; a broadcast matmul,
    # q_latent @ c[:, None].mT, would copy the latent once per head inside torch: (B, H, d_c, S).
    scores = torch.einsum("bhtc,bsc->bhts", q_latent, c) + torch.einsum("bhtr,bsr->bhts", q_rope, k_rope)
    scores = scores / math.sqrt(dims.d_nope + dims.d_rope)  # (B, H, T, S)
    if T > 1:  # one new token sees every position: its mask would hide nothing
        scores = scores.masked_fill(~_causal(T, c.shape[1]), float("-inf"))
    o_latent = torch.einsum("bhts,bsc->bhtc", torch.softmax(scores, dim=-1), c)  # (B, H, T, d_c)
    o = torch.einsum("bhtc,hcv->bhtv", o_latent, weights["w_uv"])  # (B, H, T, d_v)
    y = o.transpose(1, 2).reshape(B, T, n_heads * dims.d_v) @ weights["w_o"]  # (B, T, d)
    return y, {"c": c, "k_rope": k_rope}


def mla_attention_explicit(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    cache: dict[str, Any] | None = None,
    base: float = 10000.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The contract read literally: each head's keys and values rebuilt from the latent, one head
    at a time, then ordinary attention with the shared RoPE key appended to every head's key."""
    dims = MLADims.of(weights, n_heads)
    B, T, _ = x.shape
    s_past = latent_length(cache)
    q_nope, q_rope, c_new, kr_new = project(x, weights, dims, torch.arange(s_past, s_past + T), base)
    c, k_rope = _extend(cache, c_new, kr_new)
    S = c.shape[1]
    visible = _causal(T, S)
    heads = []
    for h in range(n_heads):
        k = torch.cat([c @ weights["w_uk"][h], k_rope], dim=-1)  # (B, S, d_nope + d_rope)
        v = c @ weights["w_uv"][h]  # (B, S, d_v)
        q = torch.cat([q_nope[:, h], q_rope[:, h]], dim=-1)  # (B, T, d_nope + d_rope)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dims.d_nope + dims.d_rope)  # (B, T, S)
        heads.append(torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1) @ v)  # (B, T, d_v)
    y = torch.cat(heads, dim=-1) @ weights["w_o"]  # heads concatenated in order: (B, T, H * d_v) @ w_o
    return y, {"c": c, "k_rope": k_rope}


def random_weights(
    gen: torch.Generator, d: int, n_heads: int, d_nope: int, d_rope: int, d_c: int, d_v: int
) -> dict[str, torch.Tensor]:
    """Weights of the contract's shapes, scaled so that scores and outputs stay around unit size."""

    def randn(*shape: int, fan_in: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) / math.sqrt(fan_in)

    return {
        "w_q": randn(d, n_heads * (d_nope + d_rope), fan_in=d),
        "w_dkv": randn(d, d_c, fan_in=d),
        "w_kr": randn(d, d_rope, fan_in=d),
        "w_uk": randn(n_heads, d_c, d_nope, fan_in=d_c),
        "w_uv": randn(n_heads, d_c, d_v, fan_in=d_c),
        "w_o": randn(n_heads * d_v, d, fan_in=n_heads * d_v),
    }
