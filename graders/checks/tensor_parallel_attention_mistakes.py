"""tensor-parallel-attention's named mistakes: each sentence, and how the battery recognises it.

Two kinds. A shard that is not the contract's is recognised by where its numbers came from: the
grader's weights are random, so every column of a w_qkv_r (every row of a w_o_r) is a copy of one
column (row) of w_qkv (w_o), and the list of those source indices says which layout was cut
(`qkv_mistake`, `w_o_mistake`). A wrong partial is recognised by its output: `rank_partial` is one
rank's attention_on_rank in float64 with each mistake as a switch, and the battery compares the
sum of the ranks' partials with the sum of these (`on_rank_variants`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from graders.checks.attention_common import MERGE_NO_TRANSPOSE, NO_MASK, attention_variant
from graders.checks.report import close
from graders.reference.attention import merge_heads, split_heads
from graders.reference.tensor_parallel import rank_heads

INTERLEAVED_QKV = (
    "the shard stores each head's q, k and v side by side ([q_h | k_h | v_h] per head, Megatron-LM's "
    "storage): the contract's w_qkv_r is three blocks, [q | k | v], each holding the rank's heads in order"
)
WHOLE_BLOCK_COLUMNS = (
    "the shard takes 3d/W consecutive columns of the whole w_qkv, so rank 0 gets queries and no values: "
    "cut each of q, k and v, taking the rank's heads from each, and put the three pieces side by side"
)
W_O_BY_COLUMNS = (
    "w_o is split by columns: the rank's heads' outputs multiply the rows h*hd:(h+1)*hd of w_o "
    "(row-parallel), and each rank's partial is full width, summed by the all-reduce"
)
REPLICATED = (
    "every rank is given the whole weight: each rank gets only its own shard, w_qkv_r (d, 3d/W) and "
    "w_o_r (d/W, d)"
)
HEAD_ORDER = (
    "the rank's heads are out of order within its shard: q, k and v each hold heads r*H/W .. (r+1)*H/W - 1 "
    "in increasing order, and w_o_r their rows in the same order"
)
OFF_BY_ONE = (
    "rank r holds the heads of rank r + 1: rank r owns heads r*H/W .. (r+1)*H/W - 1, so rank 0 starts "
    "at head 0"
)
NO_VALUE_ERROR = (
    "shard_attention does not raise ValueError when n_heads is not a multiple of world_size: "
    "the heads cannot be split evenly, so refuse with a ValueError naming both values"
)
AVERAGED = (
    "the partial is divided by world_size: the all-reduce sums the partials (each rank holds only its heads' "
    "share of the output), so nothing is averaged"
)
RESIDUAL_EVERY_RANK = (
    "each rank adds the residual x (or a bias) to its partial, so the all-reduce adds it world_size times: "
    "the partial is the rank's heads' share alone; a residual or bias is added once, after the all-reduce"
)
FULL_WIDTH_SCALE = (
    "the head size is taken from x's width, d // n_local_heads, which is world_size times too wide: the "
    "rank's heads are w_qkv_r.shape[1] // 3 // n_local_heads wide, the same hd as the whole layer's"
)
GLOBAL_WEIGHTS = (
    "attention_on_rank used weights it kept from an earlier shard_attention call, not the shard passed in: "
    "no rank sees another rank's weights, so compute from w_qkv_r and w_o_r alone"
)

SHARD_MISTAKES = (INTERLEAVED_QKV, WHOLE_BLOCK_COLUMNS, W_O_BY_COLUMNS, REPLICATED, HEAD_ORDER, OFF_BY_ONE)
ON_RANK_MISTAKES = (
    AVERAGED,
    RESIDUAL_EVERY_RANK,
    FULL_WIDTH_SCALE,
    NO_MASK,
    MERGE_NO_TRANSPOSE,
    INTERLEAVED_QKV,
)


# --- shards: where each column and row came from -------------------------------------------------


def contract_columns(d: int, n_heads: int, world_size: int, rank: int) -> list[int]:
    """w_qkv's columns in rank `rank`'s w_qkv_r, in order: its heads' q, then k, then v."""
    hd = d // n_heads
    heads = rank_heads(n_heads, world_size, rank)
    return [b * d + h * hd + j for b in range(3) for h in heads for j in range(hd)]


def contract_rows(d: int, n_heads: int, world_size: int, rank: int) -> list[int]:
    """w_o's rows in rank `rank`'s w_o_r, in order."""
    hd = d // n_heads
    return [h * hd + j for h in rank_heads(n_heads, world_size, rank) for j in range(hd)]


def _interleaved_columns(d: int, n_heads: int, world_size: int, rank: int) -> list[int]:
    hd = d // n_heads
    heads = rank_heads(n_heads, world_size, rank)
    return [b * d + h * hd + j for h in heads for b in range(3) for j in range(hd)]


def _whole_block_columns(d: int, n_heads: int, world_size: int, rank: int) -> list[int]:
    width = 3 * d // world_size
    return list(range(rank * width, (rank + 1) * width))


def sources(got: torch.Tensor, full: torch.Tensor) -> list[int] | None:
    """For each row of `got` (n, k), the index of the row of `full` (m, k) it copies; None when some
    row copies none (the weights are random, so two rows of `full` are never close)."""
    if got.dim() != 2 or full.dim() != 2 or got.shape[1] != full.shape[1] or got.shape[0] == 0:
        return None
    got64, full64 = got.double(), full.double()
    nearest = torch.cdist(got64, full64).argmin(dim=1)  # (n,)
    if not close(got64, full64[nearest]):
        return None
    return [int(i) for i in nearest]


def _permuted_heads(found: Sequence[int], want: Sequence[int], hd: int) -> bool:
    """`found` is `want` with its head-wide runs in another order (want = blocks of runs of hd)."""
    runs = [tuple(want[i : i + hd]) for i in range(0, len(want), hd)]
    got_runs = [tuple(found[i : i + hd]) for i in range(0, len(found), hd)]
    return len(found) == len(want) and got_runs != runs and sorted(got_runs) == sorted(runs)


def qkv_mistake(
    got: torch.Tensor, w_qkv: torch.Tensor, n_heads: int, world_size: int, rank: int
) -> str | None:
    """The named mistake a wrong w_qkv_r is, from the columns of w_qkv it holds."""
    d = w_qkv.shape[0]
    if got.shape == w_qkv.shape and close(got, w_qkv) and world_size > 1:
        return REPLICATED
    found = sources(got.T, w_qkv.T) if got.dim() == 2 else None
    if found is None:
        return None
    layouts = [
        (INTERLEAVED_QKV, _interleaved_columns(d, n_heads, world_size, rank)),
        (WHOLE_BLOCK_COLUMNS, _whole_block_columns(d, n_heads, world_size, rank)),
        (OFF_BY_ONE, contract_columns(d, n_heads, world_size, (rank + 1) % world_size)),
    ]
    want = contract_columns(d, n_heads, world_size, rank)
    for mistake, columns in layouts:
        if found == columns and columns != want:
            return mistake
    if _permuted_heads(found, want, d // n_heads):
        return HEAD_ORDER
    return None


def w_o_mistake(got: torch.Tensor, w_o: torch.Tensor, n_heads: int, world_size: int, rank: int) -> str | None:
    """The named mistake a wrong w_o_r is: w_o's columns instead of its rows, the whole of it, or rows
    of other heads (rank r + 1's) or in another order."""
    d = w_o.shape[0]
    if got.dim() != 2:
        return None
    if got.shape == w_o.shape and close(got, w_o) and world_size > 1:
        return REPLICATED
    columns = w_o[:, contract_rows(d, n_heads, world_size, rank)]  # (d, d/W): a column split
    if close(got, columns) or close(got, columns.T):
        return W_O_BY_COLUMNS if world_size > 1 else None
    found = sources(got, w_o)
    if found is None:
        return None
    want = contract_rows(d, n_heads, world_size, rank)
    if found == contract_rows(d, n_heads, world_size, (rank + 1) % world_size) and found != want:
        return OFF_BY_ONE
    return HEAD_ORDER if _permuted_heads(found, want, d // n_heads) else None


def spans(indices: Sequence[int]) -> str:
    """[0, 1, 2, 7, 8] -> '0-2, 7-8': a layout in a sentence."""
    out: list[str] = []
    start = prev = None
    for i in [*indices, None]:
        if prev is not None and (i is None or i != prev + 1):
            out.append(f"{start}-{prev}" if start != prev else f"{start}")
            start = i
        elif start is None:
            start = i
        prev = i
    return ", ".join(out)


# --- partials: one rank's attention_on_rank with a mistake ---------------------------------------


def rank_partial(
    x: torch.Tensor, w_qkv_r: torch.Tensor, w_o_r: torch.Tensor, n_local: int, mistake: str | None = None
) -> torch.Tensor:
    """One rank's partial (B, T, d) on its (correct) shard, with at most one mistake."""
    B, T, d = x.shape
    d_r = w_qkv_r.shape[1] // 3
    world_size = d // d_r
    hd = d_r // n_local
    if mistake == INTERLEAVED_QKV:  # reads [q_h | k_h | v_h] per head: (B, T, n_local, 3, hd)
        q, k, v = (x @ w_qkv_r).view(B, T, n_local, 3, hd).permute(3, 0, 2, 1, 4)  # each (B, n_local, T, hd)
    else:
        q, k, v = (split_heads(t, n_local) for t in (x @ w_qkv_r).split(d_r, dim=-1))  # (B, n_local, T, hd)
    scale = 1 / math.sqrt(d // n_local if mistake == FULL_WIDTH_SCALE else hd)
    o = attention_variant(q, k, v, scale=scale, mask="none" if mistake == NO_MASK else "causal")
    merged = o.reshape(B, T, d_r) if mistake == MERGE_NO_TRANSPOSE else merge_heads(o)  # (B, T, d/W)
    partial = merged @ w_o_r  # (B, T, d)
    if mistake == AVERAGED:
        return partial / world_size
    return partial + x if mistake == RESIDUAL_EVERY_RANK else partial


def applicable(mistake: str, world_size: int, T: int) -> bool:
    """Whether `mistake` changes the all-reduced output at all (so naming it can be right)."""
    if mistake in (AVERAGED, FULL_WIDTH_SCALE):
        return world_size > 1
    if mistake in (NO_MASK, MERGE_NO_TRANSPOSE):
        return T > 1
    return True


def on_rank_variants(
    x: torch.Tensor, shards: Sequence[tuple[torch.Tensor, torch.Tensor]], n_local: int
) -> list[tuple[tuple[str], torch.Tensor]]:
    """(mistake,) and the sum over ranks of its partials, for every applicable mistake (float64)."""
    out = []
    for mistake in ON_RANK_MISTAKES:
        if applicable(mistake, len(shards), x.shape[1]):
            total = sum(rank_partial(x, a.double(), b.double(), n_local, mistake) for a, b in shards)
            out.append(((mistake,), torch.as_tensor(total)))
    return out
