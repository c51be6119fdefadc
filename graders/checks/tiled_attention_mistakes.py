"""tiled-attention's known mistakes: the sentences the diagnosis names, and what a tiled attention
or a merge returns with each of them (float64; graders/checks/tiled_attention.py compares a wrong
answer with these to name the mistake).
"""

from __future__ import annotations

import math
from functools import partial

import torch

from graders.checks.attention_common import Variant
from graders.checks.remembered import remembered
from graders.reference.tiled import causal_visible, merge_attention

NO_RESCALE = (
    "the running output and denominator are not rescaled when the maximum changes: multiply both by "
    "exp(m_old - m_new) before adding a block"
)
LAST_BLOCK_DROPPED = (
    "the last, partial block of keys is skipped: when block_size does not divide Tk, the final block holds "
    "the remaining Tk % block_size keys"
)
PADDING_ATTENDED = (
    "the keys padded onto the last block are attended: a zero key still scores 0 and gets weight exp(0 - m); "
    "mask the padding or slice the last block short"
)
CAUSAL_TOP_LEFT = (
    "the causal mask is not offset for Tq < Tk: query i sits at position Tk - Tq + i and sees keys "
    "0 .. Tk - Tq + i"
)
CAUSAL_IGNORED = "causal=True is ignored: with it, query i may not see the keys after position Tk - Tq + i"
BLOCKS_AVERAGED = (
    "each block is softmaxed on its own and the blocks averaged: blocks must be combined through the running "
    "maximum and denominator, weighted by how much of the total exp-sum each holds"
)
NOT_NORMALISED = "the running output is never divided by the running denominator at the end"
NO_SCALE = "scores are not scaled: divide q @ k^T by sqrt(hd)"
OVERFLOW = (
    "NaN or inf for large scores: exp of a raw score overflows float32 above about 88; subtract the running "
    "maximum before exp (that is what it is for)"
)
MASKED_BLOCK_NAN = (
    "NaN for a block in which every key is masked for some query: its maximum is -inf and "
    "exp(-inf - (-inf)) is "
    "NaN; leave such a block out for those rows, or subtract a finite maximum"
)
NAN = "NaN or inf in the output: every query sees at least one key here, so some division or exp went wrong"
FULL_SCORES = "builds the full score matrix (or a tensor as big as one batch and head's)"
BIGGER_THAN_A_BLOCK = "builds a tensor bigger than a block of scores, a padded k or v, or the output"
MERGE_AVERAGE = "the two parts are averaged: weight each by exp(lse_j - lse), its share of the total exp-sum"
MERGE_SWAPPED = "each part is weighted by the other part's lse"
MERGE_LSE_MAX = "the merged lse is max(lse1, lse2): it is log(exp(lse1) + exp(lse2)), torch.logaddexp"
MERGE_LSE_SUM = "the merged lse is lse1 + lse2: it is log(exp(lse1) + exp(lse2)), torch.logaddexp"
MERGE_OVERFLOW = (
    "NaN or inf for large log-sum-exps: exp(lse) overflows float32; use exp(lse_j - lse) with the merged lse"
)
MERGE_EMPTY = (
    "NaN when a part has lse = -inf (it saw no key): that part must contribute nothing, exp(-inf - lse) = 0"
)
KNOWN_MISTAKES = (
    NO_RESCALE,
    LAST_BLOCK_DROPPED,
    PADDING_ATTENDED,
    CAUSAL_TOP_LEFT,
    CAUSAL_IGNORED,
    BLOCKS_AVERAGED,
    NOT_NORMALISED,
    NO_SCALE,
    OVERFLOW,
    MASKED_BLOCK_NAN,
    FULL_SCORES,
    BIGGER_THAN_A_BLOCK,
    MERGE_AVERAGE,
    MERGE_SWAPPED,
    MERGE_LSE_MAX,
    MERGE_LSE_SUM,
    MERGE_OVERFLOW,
    MERGE_EMPTY,
)


def _blocks(Tk: int, block_size: int, drop_last: bool = False) -> list[tuple[int, int]]:
    stop = Tk - Tk % block_size if drop_last else Tk
    return [(s, min(s + block_size, Tk)) for s in range(0, stop, block_size)]


def tiled_variant(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_size: int,
    causal: bool,
    *,
    rescale: bool = True,
    drop_last: bool = False,
    pad_attended: bool = False,
    top_left: bool = False,
    average_blocks: bool = False,
    normalise: bool = True,
    scale: bool = True,
) -> torch.Tensor:
    """An online softmax with the chosen mistakes; the defaults are right. (B, H, Tq, hd)."""
    Tq, hd = q.shape[-2:]
    Tk = k.shape[-2]
    if pad_attended and Tk % block_size:
        extra = block_size - Tk % block_size
        k = torch.cat([k, k.new_zeros(*k.shape[:-2], extra, hd)], dim=-2)  # zero keys, never masked
        v = torch.cat([v, v.new_zeros(*v.shape[:-2], extra, hd)], dim=-2)
    n_keys = k.shape[-2]
    m = q.new_full(q.shape[:-1], float("-inf"))
    l = q.new_zeros(q.shape[:-1])  # noqa: E741
    o = torch.zeros_like(q)
    parts = []
    for start, stop in _blocks(n_keys, block_size, drop_last):
        s = q @ k[..., start:stop, :].transpose(-2, -1) / (math.sqrt(hd) if scale else 1.0)  # (B, H, Tq, n)
        if causal:
            if top_left:
                visible = torch.arange(start, stop)[None, :] <= torch.arange(Tq)[:, None]
            else:
                visible = causal_visible(Tq, Tk, start, min(stop, Tk))
                visible = torch.cat([visible, visible.new_ones(Tq, stop - start - visible.shape[1])], dim=1)
            s = s.masked_fill(~visible, float("-inf"))
        if average_blocks:
            parts.append(torch.softmax(s, dim=-1).nan_to_num(0.0) @ v[..., start:stop, :])
            continue
        m_new = torch.maximum(m, s.amax(-1))
        shift = torch.where(torch.isinf(m_new), 0.0, m_new)
        p = torch.exp(s - shift[..., None])
        factor = torch.exp(m - shift) if rescale else torch.ones_like(m)
        l = l * factor + p.sum(-1)  # noqa: E741
        o = o * factor[..., None] + p @ v[..., start:stop, :]
        m = m_new
    if average_blocks:
        return torch.stack(parts).mean(0)
    return o / l[..., None] if normalise else o


@remembered  # a mismatch on the same inputs (every golden mistake, same seed) reuses them
def tiled_variants(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int, causal: bool
) -> list[Variant]:
    Tq, Tk = q.shape[-2], k.shape[-2]
    run = partial(tiled_variant, q, k, v, block_size, causal)
    variants: list[Variant] = [
        ((NO_RESCALE,), run(rescale=False)),
        ((BLOCKS_AVERAGED,), run(average_blocks=True)),
        ((NOT_NORMALISED,), run(normalise=False)),
        ((NO_SCALE,), run(scale=False)),
    ]
    if Tk % block_size and block_size < Tk:
        variants.append(((LAST_BLOCK_DROPPED,), run(drop_last=True)))
    if Tk % block_size:
        variants.append(((PADDING_ATTENDED,), run(pad_attended=True)))
    if causal:
        variants.append(((CAUSAL_IGNORED,), tiled_variant(q, k, v, block_size, False)))
        if Tq < Tk:
            variants.append(((CAUSAL_TOP_LEFT,), run(top_left=True)))
    return [(m, t) for m, t in variants if torch.isfinite(t).all()]


def merge_variants(o1: torch.Tensor, l1: torch.Tensor, o2: torch.Tensor, l2: torch.Tensor) -> list[Variant]:
    o, _ = merge_attention(o1, l1, o2, l2)
    swapped, _ = merge_attention(o1, l2, o2, l1)
    return [((MERGE_AVERAGE,), (o1 + o2) / 2), ((MERGE_SWAPPED,), swapped)]


def lse_variants(l1: torch.Tensor, l2: torch.Tensor) -> list[Variant]:
    return [((MERGE_LSE_MAX,), torch.maximum(l1, l2)), ((MERGE_LSE_SUM,), l1 + l2)]
