"""Run cases of the parallelism challenges: tensor-parallel-attention."""

from __future__ import annotations

from typing import Any

import torch

from graders.checks.attention_common import random_attention_weights, submission_context
from graders.checks.tensor_parallel_attention_mistakes import on_rank_variants
from graders.examples.spec import SEED, Compared, Example, Param, RunSpec, divisible, generator, randn
from graders.reference.attention import causal_self_attention
from graders.reference.tensor_parallel import shard_attention
from graders.sandbox.protocol import SubmissionLink


def _stacked(values: list[Any], shape: tuple[int, ...]) -> Any:
    """The ranks' tensors stacked (W, ...) when each has `shape`; else the first odd one, as it came."""
    for value in values:
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape:
            return value
    return torch.stack(values)


def _tp_case(session: SubmissionLink, values: dict[str, Any]) -> list[Compared]:
    B, T, d, H, W = (values[k] for k in ("B", "T", "d", "n_heads", "world_size"))
    gen = generator(values["seed"])
    w_qkv, w_o = random_attention_weights(gen, d)
    x = randn(gen, B, T, d)
    want = shard_attention(w_qkv, w_o, H, W)
    with submission_context(f"calling shard_attention(w_qkv {(d, 3 * d)}, w_o {(d, d)}, {H}, {W})"):
        got = session.call("shard_attention", w_qkv, w_o, H, W)
    pairs = got if isinstance(got, list | tuple) and len(got) == W else [(got, got)] * W
    pairs = [p if isinstance(p, list | tuple) and len(p) == 2 else (p, p) for p in pairs]
    partials = []
    for rank, (w_qkv_r, w_o_r) in enumerate(want):
        with submission_context(f"calling attention_on_rank(x {(B, T, d)}, rank {rank}'s shard, {H // W})"):
            partials.append(session.call("attention_on_rank", x, w_qkv_r, w_o_r, H // W))
    total = _stacked(partials, (B, T, d))
    if isinstance(total, torch.Tensor) and total.dim() == 4:
        total = total.double().sum(dim=0).float()  # the all-reduce
    x64 = x.double()
    return [
        Compared(
            "w_qkv_r of every rank, stacked (W, d, 3d/W)",
            _stacked([p[0] for p in pairs], (d, 3 * d // W)),
            torch.stack([a for a, _ in want]),
        ),
        Compared(
            "w_o_r of every rank, stacked (W, d/W, d)",
            _stacked([p[1] for p in pairs], (d // W, d)),
            torch.stack([b for _, b in want]),
        ),
        Compared(
            "the sum of attention_on_rank's partials on the grader's shards (B, T, d)",
            total,
            causal_self_attention(x64, w_qkv.double(), w_o.double(), H).float(),
            variants=lambda: [(m, v.float()) for m, v in on_rank_variants(x64, want, H // W)],
        ),
    ]


TENSOR_PARALLEL_ATTENTION = RunSpec(
    slug="tensor-parallel-attention",
    entry_point="shard_attention",
    also_calls=("attention_on_rank",),
    summary=(
        "Random x (B, T, d) and weights; calls shard_attention(w_qkv, w_o, n_heads, world_size), then "
        "attention_on_rank on each rank's shard as the grader cuts it, and sums the partials."
    ),
    params=(
        Param("B", "Batch size B", 1, 1, 4),
        Param("T", "Tokens T", 5, 1, 32),
        Param("d", "Model width d", 16, 2, 128, "a multiple of the head count"),
        Param("n_heads", "Heads H", 4, 1, 16, "a multiple of world_size"),
        Param("world_size", "Ranks W", 2, 1, 8),
        SEED,
    ),
    examples=(
        Example(
            "two ranks of two heads", {"B": 1, "T": 5, "d": 16, "n_heads": 4, "world_size": 2, "seed": 0}
        ),
        Example(
            "four ranks, a batch of two", {"B": 2, "T": 6, "d": 24, "n_heads": 8, "world_size": 4, "seed": 1}
        ),
        Example(
            "one rank: the whole layer", {"B": 1, "T": 4, "d": 12, "n_heads": 3, "world_size": 1, "seed": 2}
        ),
    ),
    case=_tp_case,
    rules=(divisible("d", "n_heads"), divisible("n_heads", "world_size")),
)

__all__ = ["TENSOR_PARALLEL_ATTENTION"]
