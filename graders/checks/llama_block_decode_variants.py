"""llama-block-decode's named mistakes: each sentence, and the output a layer with that mistake returns.

`llama_layer` is one call of the Llama decoder layer over a (correct) past cache, in float64, with
each mistake as a switch; the battery compares a wrong answer with these outputs to say which
mistake it is. Every switch is a whole, consistent implementation given the cache the grader hands
in (always the true rotated keys and the values, H_kv heads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from graders.checks.rope_common import BASE_IGNORED, DEFAULT_BASE, INTERLEAVED, rope_interleaved
from graders.reference.attention import merge_heads
from graders.reference.gqa import repeat_kv
from graders.reference.llama import DEFAULT_EPS, LlamaDims
from graders.reference.rope import apply_rope

EPS_OUTSIDE_ROOT = (
    "RMSNorm adds eps after the square root: x / sqrt(mean(x**2, -1) + eps), eps inside the root "
    "(it only shows when mean(x**2) is as small as eps)"
)
EPS_IGNORED = "the eps argument is ignored: RMSNorm adds the eps passed in, not a constant of your own"
NORM_ALL_DIMS = (
    "RMSNorm takes the mean over every dimension: each token is divided by its own root mean square, "
    "mean(x**2, dim=-1, keepdim=True)"
)
NORMS_SWAPPED = (
    "the two norms' weights are swapped: attn_norm scales the attention's input, mlp_norm the MLP's"
)
POST_NORM = (
    "the layer is post-norm (norm(x + attention(x))): Llama is pre-norm, h = x + attention(rmsnorm(x)) "
    "and y = h + mlp(rmsnorm(h)), the residual stream itself never normed"
)
RESIDUAL_AFTER_NORM = (
    "the residual adds the normed input: h = x + attention(rmsnorm(x)) adds the attention onto x "
    "itself, not onto rmsnorm(x)"
)
NO_ATTN_RESIDUAL = "the attention's residual is missing: h = x + attention(rmsnorm(x, attn_norm))"
NO_MLP_RESIDUAL = "the MLP's residual is missing: y = h + mlp(rmsnorm(h, mlp_norm))"
GATE_UP_SWAPPED = (
    "silu is applied to the up projection: SwiGLU is silu(z @ w_gate) * (z @ w_up), the gate "
    "branch through silu"
)
GQA_MODULO = (
    "query heads read the wrong kv heads: query head i reads kv head i // (H // H_kv) (repeat_interleave "
    "on the heads' dim), not i % H_kv (repeat or expand in tile order)"
)
SCALE_D_OVER_H = (
    "the scores are divided by sqrt(d // n_heads): the head size is hd = w_q.shape[1] // n_heads, "
    "which need not be d // n_heads, and the scale is 1 / sqrt(hd)"
)
ROTATES_VALUES = "the values are rotated too: RoPE rotates only the queries and the keys"
POSITIONS_RESTART = (
    "positions restart at 0 in every call: with S_past positions cached the new tokens sit at "
    "S_past .. S_past + T - 1 (S_past is cache['k'].shape[2])"
)
ROTATES_TWICE = (
    "the cached keys are rotated again: cache['k'] already holds rotated keys, so rotate only the new ones"
)
CACHE_UNROTATED = (
    "cache['k'] holds the keys before rotation: store them rotated, so a cached key is never rotated again"
)
MASK_NOT_OFFSET = (
    "the causal mask is not offset by the cache length: new query i sits at position S_past + i and sees "
    "keys 0 .. S_past + i (ones(T, S).tril(S_past))"
)
NO_MASK = "there is no causal mask: in a prompt or a chunk each token also sees the tokens after it"
CACHE_AFTER_REPEAT = (
    "the cache holds n_heads heads: cache k and v with their n_kv_heads heads, (B, H_kv, S, hd), and "
    "repeat them only for the scores (that is GQA's memory saving)"
)
CACHE_NEW_ONLY = "the returned cache holds only the new tokens: concatenate them onto the cached ones"
GLOBAL_STATE = (
    "the output ignored a change to the cached keys and values: read the past only from the cache passed in"
)
NO_VALUE_ERROR = (
    "no ValueError when n_heads is not a multiple of n_kv_heads: check it before any work and raise "
    "ValueError naming both"
)

NUMERICAL_MISTAKES = (
    EPS_OUTSIDE_ROOT,
    EPS_IGNORED,
    NORM_ALL_DIMS,
    NORMS_SWAPPED,
    POST_NORM,
    RESIDUAL_AFTER_NORM,
    NO_ATTN_RESIDUAL,
    NO_MLP_RESIDUAL,
    GATE_UP_SWAPPED,
    GQA_MODULO,
    SCALE_D_OVER_H,
    ROTATES_VALUES,
    INTERLEAVED,
    BASE_IGNORED,
    POSITIONS_RESTART,
    ROTATES_TWICE,
    MASK_NOT_OFFSET,
    NO_MASK,
)
CACHE_MISTAKES = (CACHE_UNROTATED, CACHE_AFTER_REPEAT, CACHE_NEW_ONLY)


@dataclass
class LayerOut:
    y: torch.Tensor  # (B, T, d)
    k: torch.Tensor  # (B, H_kv, S, hd) the returned cache
    v: torch.Tensor


def norm(x: torch.Tensor, w: torch.Tensor, eps: float, mistake: str | None) -> torch.Tensor:
    """RMSNorm of x (B, T, d) with the norm's mistakes."""
    if mistake == EPS_IGNORED:
        eps = DEFAULT_EPS
    square = x.pow(2).mean() if mistake == NORM_ALL_DIMS else x.pow(2).mean(-1, keepdim=True)  # (B, T, 1)
    if mistake == EPS_OUTSIDE_ROOT:
        return x / (square.sqrt() + eps) * w
    return x / (square + eps).sqrt() * w


def _attention(
    z: torch.Tensor,
    weights: dict[str, torch.Tensor],
    dims: LlamaDims,
    past: dict[str, torch.Tensor] | None,
    base: float,
    mistake: str | None,
) -> LayerOut:
    """The attention sub-layer on its input z (B, T, d) over the true cache: its output (B, T, d) and
    the cache it returns, with the attention's mistakes."""
    B, T, d = z.shape
    H, H_kv, hd = dims.n_heads, dims.n_kv_heads, dims.hd
    s_past = 0 if not past else past["k"].shape[-2]
    S = s_past + T
    positions = torch.arange(T) if mistake == POSITIONS_RESTART else torch.arange(s_past, S)
    rotate = rope_interleaved if mistake == INTERLEAVED else apply_rope
    if mistake == BASE_IGNORED:
        base = DEFAULT_BASE
    q = rotate((z @ weights["w_q"]).view(B, T, H, hd).transpose(1, 2), positions, base)  # (B, H, T, hd)
    k = (z @ weights["w_k"]).view(B, T, H_kv, hd).transpose(1, 2)  # (B, H_kv, T, hd)
    v = (z @ weights["w_v"]).view(B, T, H_kv, hd).transpose(1, 2)
    if mistake not in (CACHE_UNROTATED, ROTATES_TWICE):
        k = rotate(k, positions, base)
    if mistake == ROTATES_VALUES:
        v = rotate(v, positions, base)
    if past:
        k = torch.cat([past["k"], k], dim=-2)  # (B, H_kv, S, hd)
        v = torch.cat([past["v"], v], dim=-2)
    k_used = k
    if mistake in (ROTATES_TWICE, CACHE_UNROTATED):  # rotates every key at use, cached ones again
        k_used = rotate(k, torch.arange(S), base)
        if mistake == ROTATES_TWICE:  # and caches what it used; CACHE_UNROTATED caches them raw
            k = k_used
    n_rep = H // H_kv
    if mistake == GQA_MODULO:  # query head i reads kv head i % H_kv
        k_rep, v_rep = k_used.repeat(1, n_rep, 1, 1), v.repeat(1, n_rep, 1, 1)  # (B, H, S, hd)
    else:
        k_rep, v_rep = repeat_kv(k_used, n_rep), repeat_kv(v, n_rep)  # (B, H, S, hd)
    scale = math.sqrt(d // H if mistake == SCALE_D_OVER_H else hd)
    scores = q @ k_rep.transpose(-2, -1) / scale  # (B, H, T, S)
    if mistake != NO_MASK:
        visible = torch.ones(T, S, dtype=torch.bool).tril(0 if mistake == MASK_NOT_OFFSET else s_past)
        scores = scores.masked_fill(~visible, float("-inf"))
    return LayerOut(merge_heads(torch.softmax(scores, dim=-1) @ v_rep) @ weights["w_o"], k, v)


def _mlp(m: torch.Tensor, weights: dict[str, torch.Tensor], mistake: str | None) -> torch.Tensor:
    gate, up = m @ weights["w_gate"], m @ weights["w_up"]  # (B, T, f)
    hidden = F.silu(up) * gate if mistake == GATE_UP_SWAPPED else F.silu(gate) * up
    return hidden @ weights["w_down"]  # (B, T, d)


def llama_layer(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    n_kv_heads: int,
    past: dict[str, torch.Tensor] | None,
    base: float,
    eps: float,
    mistake: str | None = None,
) -> LayerOut:
    """One call on x (B, T, d) over `past` (float64, the true cache) with at most one mistake."""
    dims = LlamaDims.of(weights, n_heads, n_kv_heads)
    attn_w, mlp_w = weights["attn_norm"], weights["mlp_norm"]
    if mistake == NORMS_SWAPPED:
        attn_w, mlp_w = mlp_w, attn_w
    if mistake == POST_NORM:  # each sub-layer reads the raw stream; the sum is normed
        attn = _attention(x, weights, dims, past, base, None)
        h = norm(x + attn.y, attn_w, eps, None)
        return LayerOut(norm(h + _mlp(h, weights, None), mlp_w, eps, None), attn.k, attn.v)
    z = norm(x, attn_w, eps, mistake)  # (B, T, d)
    attn = _attention(z, weights, dims, past, base, mistake)
    h = {RESIDUAL_AFTER_NORM: z + attn.y, NO_ATTN_RESIDUAL: attn.y}.get(mistake or "", x + attn.y)
    m = norm(h, mlp_w, eps, mistake)
    mlp = _mlp(m, weights, mistake)
    y = {RESIDUAL_AFTER_NORM: m + mlp, NO_MLP_RESIDUAL: mlp}.get(mistake or "", h + mlp)
    return LayerOut(y, attn.k, attn.v)


def applicable(mistake: str, T: int, s_past: int, base: float, eps: float) -> bool:
    """Whether `mistake` can change this call's output (so naming it can be right)."""
    if mistake == BASE_IGNORED:
        return base != DEFAULT_BASE
    if mistake == EPS_IGNORED:
        return eps != DEFAULT_EPS
    if mistake in (POSITIONS_RESTART, ROTATES_TWICE):
        return s_past > 0
    if mistake == MASK_NOT_OFFSET:
        return s_past > 0 and T > 1
    if mistake == NO_MASK:
        return T > 1
    return True


def layer_variants(
    x: torch.Tensor,
    weights: dict[str, torch.Tensor],
    n_heads: int,
    n_kv_heads: int,
    past: dict[str, Any] | None,
    base: float,
    eps: float,
) -> dict[str, LayerOut]:
    """Every applicable mistake's output for this call."""
    s_past = 0 if not past else past["k"].shape[-2]
    return {
        m: llama_layer(x, weights, n_heads, n_kv_heads, past, base, eps, m)
        for m in (*NUMERICAL_MISTAKES, CACHE_UNROTATED)
        if applicable(m, x.shape[1], s_past, base, eps)
    }
