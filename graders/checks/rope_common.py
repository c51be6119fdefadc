"""What the two RoPE batteries share (rope-cached-attention, left-padded-decoding).

- the classic wrong rotations (`WRONG_ROTATIONS`), each a function like apply_rope;
- `rope_layer`: one call of a RoPE attention layer over a cache, with each classic
  mistake as a switch, so a battery can name the mistake a wrong output matches;
- `call_layer`: one call of the submission's layer, decoded into (y, cache) or a failed
  test saying what came back instead;
- `cache_variants`: wrong contents of the returned cache.

Every call the batteries make gets a cache dict the grader built from its own reference
(only "k" and "v", or None / {} for the first call), never the dict the submission
returned: a submission cannot tell a probe (a changed cached row) from an ordinary call,
and every returned cache is checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from graders.checks.attention_common import Variant, decode_tensor, describe
from graders.checks.report import Mismatch
from graders.reference.attention import merge_heads, project_qkv
from graders.reference.rope import apply_rope, rope_angles

DEFAULT_BASE = 10000.0

INTERLEAVED = (
    "components are paired as (2i, 2i + 1), the interleaved GPT-J layout: the half-split pairing "
    "rotates component i with component i + hd/2"
)
WRONG_WAY = (
    "the rotation goes the wrong way: out[i] = x[i] cos - x[i + hd/2] sin and "
    "out[i + hd/2] = x[i + hd/2] cos + x[i] sin"
)
THETA_EXPONENT = "the frequencies are base ** (-i / hd): theta_i = base ** (-2i / hd), i = 0 .. hd/2 - 1"
BASE_IGNORED = "the base argument is ignored: theta_i = base ** (-2i / hd) with the base passed in, not 10000"
ROTATES_VALUES = "the values are rotated too: RoPE rotates only the queries and the keys"
NO_ROPE_Q = "the queries are not rotated: rotate q and k, both after the head split"
NO_ROPE_K = "the keys are not rotated: rotate q and k, both after the head split"
CACHE_UNROTATED = (
    "the cache holds the keys before rotation: store them rotated, so a cached key never needs rotating again"
)
CACHE_BTHD = "the cache is stored as (B, t, n_heads, hd): keep (B, n_heads, t, hd), concatenated on dim=2"
CACHE_SWAPPED = "cache['k'] and cache['v'] are swapped"
CACHE_NEW_ONLY = "the returned cache holds only the new tokens: concatenate them onto the cached ones"
SCALE_SQRT_D = "scores are divided by sqrt(d), not sqrt(head size): use hd = d // n_heads"


def rope_interleaved(x: torch.Tensor, positions: torch.Tensor, base: float = DEFAULT_BASE) -> torch.Tensor:
    """Pairs (2i, 2i + 1) instead of (i, i + hd/2)."""
    hd = x.shape[-1]
    angles = rope_angles(positions, hd, base, x.dtype)  # (..., T, hd/2)
    c, s = angles.cos(), angles.sin()
    a, b = x[..., 0::2], x[..., 1::2]  # each (B, H, T, hd/2)
    return torch.stack([a * c - b * s, b * c + a * s], dim=-1).flatten(-2)  # (B, H, T, hd)


def rope_wrong_way(x: torch.Tensor, positions: torch.Tensor, base: float = DEFAULT_BASE) -> torch.Tensor:
    return apply_rope(x, -positions, base)


def rope_no_two(x: torch.Tensor, positions: torch.Tensor, base: float = DEFAULT_BASE) -> torch.Tensor:
    """theta_i = base ** (-i / hd): the same as the right rotation with base ** (1/2)."""
    return apply_rope(x, positions, math.sqrt(base))


def rope_default_base(x: torch.Tensor, positions: torch.Tensor, base: float = DEFAULT_BASE) -> torch.Tensor:
    return apply_rope(x, positions, DEFAULT_BASE)


Rotation = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]

# (the mistake, the rotation it makes); BASE_IGNORED only tells apart when base != 10000.
WRONG_ROTATIONS: list[tuple[str, Rotation]] = [
    (INTERLEAVED, rope_interleaved),
    (WRONG_WAY, rope_wrong_way),
    (THETA_EXPONENT, rope_no_two),
    (BASE_IGNORED, rope_default_base),
]


def wrong_rotations(base: float) -> list[tuple[str, Rotation]]:
    return [(m, r) for m, r in WRONG_ROTATIONS if m != BASE_IGNORED or base != DEFAULT_BASE]


@dataclass
class LayerOut:
    y: torch.Tensor  # (B, T, d)
    k: torch.Tensor  # (B, n_heads, S, hd) the cache after the call
    v: torch.Tensor


def rope_layer(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    past: dict[str, torch.Tensor] | None,
    positions: torch.Tensor,
    visible: torch.Tensor,
    base: float,
    *,
    rotate: Rotation = apply_rope,
    rotate_q: bool = True,
    rotate_k: bool = True,
    rotate_v: bool = False,
    rerotate_cached: bool = False,
    scale: float | None = None,
) -> LayerOut:
    """One call over a (correct) past cache, with the chosen mistakes.

    positions (T,) or (B, T) for the new tokens; visible (B or 1, 1, T, S) bool. A query
    row that sees no key gets output 0 (the contract allows anything finite there).
    """
    B, T, d = x.shape
    q, k, v = project_qkv(x, w_qkv, n_heads)  # each (B, n_heads, T, hd)
    hd = q.shape[-1]
    if rotate_q:
        q = rotate(q, positions, base)
    if rotate_k and not rerotate_cached:
        k = rotate(k, positions, base)
    if rotate_v:
        v = rotate(v, positions, base)
    if past:
        k = torch.cat([past["k"], k], dim=-2)  # (B, n_heads, S, hd)
        v = torch.cat([past["v"], v], dim=-2)
    if rerotate_cached:  # every key, cached ones included, rotated at its position 0..S-1
        k = rotate(k, torch.arange(k.shape[-2]), base)
    scores = q @ k.transpose(-2, -1) * (1 / math.sqrt(hd) if scale is None else scale)  # (B, n_heads, T, S)
    scores = scores.masked_fill(~visible, float("-inf"))
    has_key = visible.any(-1, keepdim=True)  # (B or 1, 1, T, 1)
    weights = F.softmax(scores.masked_fill(~has_key, 0.0), dim=-1)
    y = (weights @ v).masked_fill(~has_key, 0.0)  # (B, n_heads, T, hd)
    return LayerOut(merge_heads(y) @ w_o, k, v)


def call_layer(got: Any, what: str) -> tuple[torch.Tensor, Any]:
    """The submission's (y, cache) return value, y decoded; Mismatch for anything else."""
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise Mismatch(f"{what} should return a pair (y, cache), got {describe(got)}")
    return decode_tensor(got[0], f"{what}'s y"), got[1]


def cache_tensor(cache: Any, key: str, what: str) -> torch.Tensor:
    if not isinstance(cache, dict):
        raise Mismatch(f"{what}'s cache should be a dict with 'k' and 'v', got {describe(cache)}")
    if key not in cache:
        raise Mismatch(f"{what}'s cache has no {key!r} entry: return {{'k': keys, 'v': values}}")
    return decode_tensor(cache[key], f"{what}'s cache[{key!r}]")


def cache_variants(
    key: str, want: torch.Tensor, other: torch.Tensor, wrong: Sequence[Variant] = (), new: int = 0
) -> list[Variant]:
    """Wrong layouts of cache[key] (B, n_heads, S, hd), plus content mistakes the battery computed."""
    variants: list[Variant] = [((CACHE_BTHD,), want.transpose(1, 2)), ((CACHE_SWAPPED,), other), *wrong]
    if 0 < new < want.shape[-2]:
        variants.append(((CACHE_NEW_ONLY,), want[:, :, -new:]))
    return variants
