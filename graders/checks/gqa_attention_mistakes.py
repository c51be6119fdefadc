"""gqa-attention's known mistakes: the sentences the diagnosis names, and what GQA's forward
returns with each of them (graders/checks/gqa_attention.py compares a wrong answer with these
to name the mistake).
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from graders.checks.attention_common import (
    MASK_AFTER_SOFTMAX,
    MERGE_NO_TRANSPOSE,
    NO_MASK,
    NO_SCALE,
    NOT_FINITE,
    SCALE_D,
    SCALE_HD,
    SCALE_MISTAKES,
    SCALE_SQRT_D,
    MaskKind,
    Scale,
    Variant,
    attention_variant,
    scale_factor,
)
from graders.reference.attention import merge_heads
from graders.reference.gqa import KVCache, repeat_kv

CACHE_AFTER_REPEAT = (
    "the cache keeps n_q heads: repeat after caching, not before (store k and v with n_kv heads; "
    "that is where GQA's memory saving comes from)"
)
MASK_NOT_OFFSET = (
    "the causal mask is not offset by the cache length: new query i sits at position S - T + i and sees "
    "keys 0..S - T + i, so the mask is tril(S - T), not tril(0) (is_causal=True in "
    "scaled_dot_product_attention aligns the mask top-left)"
)
REPEAT_TILED = (
    "query heads read the wrong kv heads: query head i reads kv head i // (n_q // n_kv), "
    "which is repeat_interleave on dim=1, not repeat/expand in tile order"
)
KV_SPLIT = (
    "kv is split as view(B, T, n_kv, 2, hd): the layout is view(B, T, 2, n_kv, hd), "
    "all keys first, then all values"
)
CACHE_IGNORED = (
    "the cache passed in is not used: new queries must also attend over the cached keys and values"
)
CACHE_NOT_APPENDED = (
    "the returned cache holds only the new positions: return the old cache concatenated with "
    "the new keys and values on dim=2"
)
CACHE_BTHD = "the cache is returned as (B, S, n_kv, hd): the layout is (B, n_kv, S, hd)"
CACHE_SWAPPED = "the returned cache is (v, k): return (k, v)"
KEPT_STATE = (
    "the module ignored a change to the cache it was given: read the past only from the cache argument, "
    "not from anything kept on the module"
)
# Every sentence the diagnosis can name (graders/mistakes.py gives each its constant's name as id).
KNOWN_MISTAKES = (
    CACHE_AFTER_REPEAT, MASK_NOT_OFFSET, REPEAT_TILED, KV_SPLIT, CACHE_IGNORED, CACHE_NOT_APPENDED,
    CACHE_BTHD, CACHE_SWAPPED, KEPT_STATE, NO_MASK, MASK_AFTER_SOFTMAX, MERGE_NO_TRANSPOSE, SCALE_SQRT_D,
    SCALE_D, SCALE_HD, NO_SCALE, NOT_FINITE,
)  # fmt: skip

KVSplit = Literal["grouped", "interleaved"]
Repeat = Literal["interleave", "tile"]


def gqa_variant(
    w: dict[str, torch.Tensor],
    x: torch.Tensor,
    cache: KVCache | None,
    n_q: int,
    n_kv: int,
    *,
    kv_split: KVSplit = "grouped",
    repeat: Repeat = "interleave",
    mask: MaskKind = "causal",
    scale: Scale = "sqrt_hd",
    use_cache: bool = True,
    mask_after_softmax: bool = False,
    merge_transpose: bool = True,
) -> tuple[torch.Tensor, KVCache]:
    """GQA's forward with the chosen mistakes; the defaults are the right answer."""
    B, T, d = x.shape
    hd, n_rep = d // n_q, n_q // n_kv
    q = (x @ w["q.weight"].T).view(B, T, n_q, hd).transpose(1, 2)  # (B, n_q, T, hd)
    kv = x @ w["kv.weight"].T  # (B, T, 2 * n_kv * hd)
    if kv_split == "grouped":
        k, v = kv.view(B, T, 2, n_kv, hd).unbind(2)  # each (B, T, n_kv, hd)
    else:
        k, v = kv.view(B, T, n_kv, 2, hd).unbind(3)  # each (B, T, n_kv, hd), wrongly interleaved
    k, v = k.transpose(1, 2), v.transpose(1, 2)  # each (B, n_kv, T, hd)
    if cache is not None and use_cache:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)  # (B, n_kv, S, hd)
    if repeat == "interleave":
        k_rep, v_rep = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # (B, n_q, S, hd)
    else:
        k_rep, v_rep = k.repeat(1, n_rep, 1, 1), v.repeat(1, n_rep, 1, 1)  # (B, n_q, S, hd), tile order
    y = attention_variant(
        q, k_rep, v_rep, scale=scale_factor(scale, d, hd), mask=mask, mask_after_softmax=mask_after_softmax
    )  # (B, n_q, T, hd)
    merged = merge_heads(y) if merge_transpose else y.reshape(B, T, d)  # (B, T, d)
    return merged @ w["o.weight"].T, (k, v)


def output_variants(
    w: dict[str, torch.Tensor], x: torch.Tensor, cache: KVCache | None, n_q: int, n_kv: int
) -> list[Variant]:
    """Outputs of the classic single mistakes, for naming a wrong y."""
    options: list[tuple[str, dict[str, Any]]] = [
        (REPEAT_TILED, {"repeat": "tile"}),
        (MASK_NOT_OFFSET, {"mask": "top_left"}),
        (CACHE_IGNORED, {"use_cache": False}),
        (NO_MASK, {"mask": "none"}),
        (MASK_AFTER_SOFTMAX, {"mask_after_softmax": True}),
        (KV_SPLIT, {"kv_split": "interleaved"}),
        (MERGE_NO_TRANSPOSE, {"merge_transpose": False}),
    ]
    options += [(sentence, {"scale": kind}) for kind, sentence in SCALE_MISTAKES.items()]
    return [((sentence,), gqa_variant(w, x, cache, n_q, n_kv, **kw)[0]) for sentence, kw in options]


def cache_variants(want: torch.Tensor, other: torch.Tensor, n_q: int, new: int) -> list[Variant]:
    """Wrong caches, given the right one (B, n_kv, S, hd) and the other of k and v; `new` positions
    came from the last call."""
    n_kv, S = want.shape[1], want.shape[2]
    variants: list[Variant] = [
        ((CACHE_BTHD,), want.transpose(1, 2)),
        ((CACHE_SWAPPED,), other),
    ]
    if n_q != n_kv:
        n_rep = n_q // n_kv
        variants.append(((CACHE_AFTER_REPEAT,), repeat_kv(want, n_rep)))
        variants.append(((CACHE_AFTER_REPEAT,), want.repeat(1, n_rep, 1, 1)))
    if new < S:
        variants.append(((CACHE_NOT_APPENDED,), want[:, :, S - new :]))
    return variants
