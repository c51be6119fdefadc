"""mla-decode's named mistakes: each sentence, and the output a layer with that mistake returns.

`mla_layer` is one call of multi-head latent attention over a (correct) past cache, in float64,
with each mistake as a switch; the battery compares a wrong answer with these outputs to say
which mistake it is. Every switch is the output of a whole, consistent implementation given the
cache the grader hands in (always the true latent and the rotated RoPE keys).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from graders.checks.remembered import remembered
from graders.checks.rope_common import (
    BASE_IGNORED,
    DEFAULT_BASE,
    INTERLEAVED,
    THETA_EXPONENT,
    WRONG_WAY,
    wrong_rotations,
)
from graders.reference.mla import MLADims
from graders.reference.rope import apply_rope

SCALE_NOPE = (
    "the scores are divided by sqrt(d_nope): each head's key is [c_j @ w_uk[h], k_rope_j], "
    "d_nope + d_rope wide, so divide by sqrt(d_nope + d_rope)"
)
SCALE_LATENT = (
    "the scores are divided by sqrt(d_c + d_rope), the width of the absorbed key: absorption changes "
    "how a score is computed, not its value, so the scale stays 1 / sqrt(d_nope + d_rope)"
)
ROPE_WHOLE_Q = (
    "RoPE rotates each head's whole query: only q_rope, the last d_rope components, is rotated; "
    "q_nope meets a key rebuilt from the latent, which carries no position"
)
ROPE_LATENT = (
    "RoPE rotates the latent c: the latent carries no position (that is why the RoPE key is decoupled), "
    "only q_rope and k_rope are rotated"
)
NO_ROPE_Q = "q_rope is not rotated: rotate q_rope and k_rope, both at the token's position"
NO_ROPE_K = "k_rope is not rotated: rotate q_rope and k_rope, both at the token's position"
THETA_HEAD_DIM = (
    "the RoPE frequencies use the head's whole width d_nope + d_rope: RoPE's hd here is d_rope, "
    "theta_i = base ** (-2i / d_rope)"
)
Q_ROPE_FIRST = (
    "q_rope is taken from the first d_rope components of each head's query: q_nope is the first d_nope, "
    "q_rope the rest"
)
POSITIONS_RESTART = (
    "positions restart at 0 in every call: with S_past positions cached the new tokens sit at "
    "S_past .. S_past + T - 1 (S_past is cache['c'].shape[1])"
)
ROTATES_TWICE = (
    "the cached RoPE keys are rotated again: cache['k_rope'] already holds rotated keys, so rotate only "
    "the new ones"
)
MASK_NOT_OFFSET = (
    "the causal mask is not offset by the cache length: new query i sits at position S_past + i and sees "
    "positions 0 .. S_past + i (ones(T, S).tril(S_past))"
)
NO_MASK = "there is no causal mask: in a prompt or a chunk each token also sees the tokens after it"
MERGE_NO_TRANSPOSE = (
    "the heads are merged without transposing back to (B, T, H, d_v): "
    "o.transpose(1, 2).reshape(B, T, H * d_v), not o.reshape(B, T, H * d_v)"
)
CACHE_UNROTATED = (
    "cache['k_rope'] holds the RoPE keys before rotation: store them rotated, so a cached key is never "
    "rotated again"
)
CACHE_NEW_ONLY = "the returned cache holds only the new tokens: concatenate them onto the cached ones"
GLOBAL_STATE = (
    "the output ignored a change to the cached latent and RoPE keys: read the past only from the cache "
    "passed in"
)
PER_HEAD_KEYS = (
    "builds per-head keys for every cached position at decode: absorb w_uk into the query "
    "(q_nope[h] @ w_uk[h].T scores the latent directly)"
)
PER_HEAD_VALUES = (
    "builds per-head values for every cached position at decode: absorb w_uv (weight the latent with "
    "the softmax, then multiply by w_uv[h] once)"
)
PER_HEAD_MEMORY = (
    "builds per-head keys or values for every cached position at decode (the kernel's count of its "
    "process's memory says so): absorb w_uk into the query and w_uv into the output"
)

NUMERICAL_MISTAKES = (
    SCALE_NOPE,
    SCALE_LATENT,
    ROPE_WHOLE_Q,
    ROPE_LATENT,
    NO_ROPE_Q,
    NO_ROPE_K,
    THETA_HEAD_DIM,
    INTERLEAVED,
    WRONG_WAY,
    THETA_EXPONENT,
    BASE_IGNORED,
    Q_ROPE_FIRST,
    POSITIONS_RESTART,
    ROTATES_TWICE,
    MASK_NOT_OFFSET,
    NO_MASK,
    MERGE_NO_TRANSPOSE,
)
CACHE_MISTAKES = (CACHE_UNROTATED, CACHE_NEW_ONLY)

Rotation = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]


@dataclass
class LayerOut:
    y: torch.Tensor  # (B, T, d)
    c: torch.Tensor  # (B, S, d_c) the returned cache
    k_rope: torch.Tensor  # (B, S, d_rope)


def _rotate_one_head(rotate: Rotation, x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """(B, T, w) -> (B, T, w) through a (B, H, T, hd) rotation with one head."""
    return rotate(x[:, None], positions, base)[:, 0]


def mla_layer(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    past: dict[str, torch.Tensor] | None,
    base: float,
    mistake: str | None = None,
) -> LayerOut:
    """One call on x (B, T, d) over `past` (float64, the true cache) with at most one mistake."""
    dims = MLADims.of(weights, n_heads)
    B, T, _ = x.shape
    dn, dr = dims.d_nope, dims.d_rope
    s_past = 0 if not past else past["c"].shape[1]
    S = s_past + T
    positions = torch.arange(T) if mistake == POSITIONS_RESTART else torch.arange(s_past, S)
    rotate: Rotation = dict(wrong_rotations(base)).get(mistake or "", apply_rope)
    if mistake == THETA_HEAD_DIM:  # base ** (-2i / (dn + dr)) = (base ** (dr / (dn + dr))) ** (-2i / dr)
        base = base ** (dr / (dn + dr))

    q = (x @ weights["w_q"]).view(B, T, n_heads, dn + dr).transpose(1, 2)  # (B, H, T, dn + dr)
    if mistake == Q_ROPE_FIRST:
        q_rope, q_nope = q[..., :dr], q[..., dr:]
    else:
        q_nope, q_rope = q[..., :dn], q[..., dn:]
    if mistake == ROPE_WHOLE_Q:
        q = rotate(torch.cat([q_nope, q_rope], dim=-1), positions, base)
        q_nope, q_rope = q[..., :dn], q[..., dn:]
    elif mistake != NO_ROPE_Q:
        q_rope = rotate(q_rope, positions, base)
    c = x @ weights["w_dkv"]  # (B, T, d_c)
    if mistake == ROPE_LATENT:
        c = _rotate_one_head(rotate, c, positions, base)
    k_raw = x @ weights["w_kr"]  # (B, T, d_rope)
    rotate_new = mistake not in (NO_ROPE_K, CACHE_UNROTATED, ROTATES_TWICE)
    k_rope = _rotate_one_head(rotate, k_raw, positions, base) if rotate_new else k_raw
    if past:
        c = torch.cat([past["c"], c], dim=1)  # (B, S, d_c)
        k_rope = torch.cat([past["k_rope"], k_rope], dim=1)  # (B, S, d_rope)
    k_used = k_rope
    if mistake in (ROTATES_TWICE, CACHE_UNROTATED):  # rotates every key at use, cached ones again
        k_used = _rotate_one_head(rotate, k_rope, torch.arange(S), base)
        if mistake == ROTATES_TWICE:  # and caches what it used; CACHE_UNROTATED caches them raw
            k_rope = k_used

    k_nope = torch.einsum("bsc,hcn->bhsn", c, weights["w_uk"])  # (B, H, S, d_nope): float64, small
    v = torch.einsum("bsc,hcv->bhsv", c, weights["w_uv"])  # (B, H, S, d_v)
    scale = {SCALE_NOPE: dn, SCALE_LATENT: dims.d_c + dr}.get(mistake or "", dn + dr)
    scores = (q_nope @ k_nope.transpose(-2, -1) + q_rope @ k_used[:, None].transpose(-2, -1)) / math.sqrt(
        scale
    )
    if mistake != NO_MASK:
        visible = torch.ones(T, S, dtype=torch.bool).tril(0 if mistake == MASK_NOT_OFFSET else s_past)
        scores = scores.masked_fill(~visible, float("-inf"))
    o = torch.softmax(scores, dim=-1) @ v  # (B, H, T, d_v)
    merged = o.reshape(B, T, -1) if mistake == MERGE_NO_TRANSPOSE else o.transpose(1, 2).reshape(B, T, -1)
    return LayerOut(merged @ weights["w_o"], c, k_rope)


def applicable(mistake: str, dims: MLADims, T: int, s_past: int, base: float) -> bool:
    """Whether `mistake` changes this call's output at all (so naming it can be right)."""
    if mistake == BASE_IGNORED:
        return base != DEFAULT_BASE
    if mistake == ROPE_LATENT:
        return dims.d_c % 2 == 0
    if mistake in (POSITIONS_RESTART, ROTATES_TWICE):
        return s_past > 0
    if mistake == MASK_NOT_OFFSET:
        return s_past > 0 and T > 1
    if mistake in (NO_MASK, MERGE_NO_TRANSPOSE):
        return T > 1
    return True


@remembered  # asked for by each comparison of a wrong call, and by every golden mistake on a seed
def layer_variants(
    x: torch.Tensor, weights: dict[str, torch.Tensor], n_heads: int, past: dict[str, Any] | None, base: float
) -> dict[str, LayerOut]:
    """Every applicable mistake's output for this call."""
    dims = MLADims.of(weights, n_heads)
    s_past = 0 if not past else past["c"].shape[1]
    return {
        m: mla_layer(x, weights, n_heads, past, base, m)
        for m in (*NUMERICAL_MISTAKES, CACHE_UNROTATED)
        if applicable(m, dims, x.shape[1], s_past, base)
    }
