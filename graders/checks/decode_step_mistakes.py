"""decode-step's known mistakes: the sentences the diagnosis names, and what a step or its cache holds
with each of them (graders/checks/decode_step.py compares a wrong answer with these to name the
mistake).
"""

from __future__ import annotations

import torch

from graders.checks.attention_common import (
    NO_SCALE,
    NOT_FINITE,
    SCALE_D,
    SCALE_HD,
    SCALE_MISTAKES,
    SCALE_SQRT_D,
    Variant,
    attention_variant,
    scale_factor,
)
from graders.reference.attention import merge_heads, project_qkv

NOT_APPENDED = (
    "the new key and value are appended after the scores are taken: append them first, "
    "so the new token also attends to itself"
)
NO_CACHE_READ = "the step attends only to the new token: it must read the past keys and values from the cache"
MASK_NOT_OFFSET = (
    "the mask is not offset by the cache length, so the new token sees only token 0: "
    "a decode step's one query is the newest position and may see every cached key (it needs no mask)"
)
HIDES_ALL = (
    "the mask hides every key: a decode step's one query is the newest position and may see "
    "every cached key, so it needs no mask"
)
CACHE_BTHD = (
    "the cache is stored as (B, t, n_heads, hd): keep cache['k'] and cache['v'] as (B, n_heads, t, hd), "
    "concatenated on dim=2"
)
CACHE_K_TRANSPOSED = (
    "cache['k'] is stored transposed, as (B, n_heads, hd, t): store (B, n_heads, t, hd) "
    "and transpose when taking the scores"
)
CACHE_MERGED = "the cache holds (B, t, d) projections: split the heads and store (B, n_heads, t, hd)"
CACHE_OVERWRITTEN = (
    "the cache keeps only the newest token: concatenate the new key and value onto it (dim=2) "
    "instead of replacing it"
)
CACHE_SWAPPED = "cache['k'] and cache['v'] are swapped"
GLOBAL_STATE = (
    "the step ignored a change to the cached keys and values: read the past only from cache['k'] "
    "and cache['v'], not from anything kept between calls"
)
# Every sentence the diagnosis can name (graders/mistakes.py gives each its constant's name as id).
KNOWN_MISTAKES = (
    NOT_APPENDED, NO_CACHE_READ, MASK_NOT_OFFSET, HIDES_ALL, CACHE_BTHD, CACHE_K_TRANSPOSED, CACHE_MERGED,
    CACHE_OVERWRITTEN, CACHE_SWAPPED, GLOBAL_STATE, SCALE_SQRT_D, SCALE_D, SCALE_HD, NO_SCALE, NOT_FINITE,
)  # fmt: skip


def step_variants(
    x_new: torch.Tensor,
    past_k: torch.Tensor,
    past_v: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
) -> list[Variant]:
    """What a step with one classic mistake returns, given the true past (B, n_heads, t-1, hd)."""
    d = x_new.shape[-1]
    q, k, v = project_qkv(x_new, w_qkv, n_heads)  # each (B, n_heads, 1, hd)
    hd = q.shape[-1]
    k_all, v_all = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)  # (B, n_heads, t, hd)
    right = scale_factor("sqrt_hd", d, hd)

    def out(y: torch.Tensor) -> torch.Tensor:
        return merge_heads(y) @ w_o  # (B, 1, d)

    variants: list[Variant] = [((NO_CACHE_READ,), out(attention_variant(q, k, v, scale=right)))]
    if past_k.shape[2] > 0:
        variants.append(((NOT_APPENDED,), out(attention_variant(q, past_k, past_v, scale=right))))
        variants.append(
            ((MASK_NOT_OFFSET,), out(attention_variant(q, k_all, v_all, scale=right, mask="top_left")))
        )
        variants.append(((HIDES_ALL,), out(attention_variant(q, k_all, v_all, scale=right, mask="hide_all"))))
    for kind, sentence in SCALE_MISTAKES.items():
        wrong = scale_factor(kind, d, hd)
        variants.append(((sentence,), out(attention_variant(q, k_all, v_all, scale=wrong))))
    return variants


def cache_variants(key: str, want: torch.Tensor, other: torch.Tensor) -> list[Variant]:
    """Wrong layouts of cache[key], given the right (B, n_heads, t, hd) and the other entry's."""
    B, H, t, hd = want.shape
    variants: list[Variant] = [
        ((CACHE_BTHD,), want.transpose(1, 2)),
        ((CACHE_MERGED,), want.transpose(1, 2).reshape(B, t, H * hd)),
        ((CACHE_SWAPPED,), other),
    ]
    if key == "k":
        variants.append(((CACHE_K_TRANSPOSED,), want.transpose(-2, -1)))
    if t > 1:
        variants.append(((CACHE_OVERWRITTEN,), want[:, :, -1:]))
    return variants
