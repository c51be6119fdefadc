"""tensor-parallel-attention: `shard_attention(w_qkv, w_o, n_heads, world_size)` and
`attention_on_rank(x, w_qkv_r, w_o_r, n_local_heads)`.

Every run draws fresh sizes (B, T, d, n_heads and world_size all different from each other, two or
three heads per rank, so a swap of two changes the answer) and weights, for world sizes 1, 2 and 4.
The two halves are graded apart:
- the shards shard_attention returns are compared, rank by rank, with the contract's (their
  shapes first: each rank gets only its own shard); a wrong one is named from the columns and
  rows of the weights it holds (graders/checks/tensor_parallel_attention_mistakes.py);
- attention_on_rank is only ever handed shards the grader cut itself (graders/reference/
  tensor_parallel.py), one rank at a time, and the grader sums the partials (the all-reduce) and
  compares the sum with causal_self_attention in float64.
One test runs the two together; one calls shard_attention on weights and then hands
attention_on_rank the shards of other weights of the same shapes, so a rank that reads weights kept
from shard_attention instead of the shard passed in fails; one asks for ValueError on head counts
the ranks do not divide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from graders.checks.attention_common import (
    MERGE_NO_TRANSPOSE,
    NO_MASK,
    compare,
    decode_tensor,
    describe,
    fail,
    random_attention_weights,
    submission_context,
)
from graders.checks.report import CheckReport, Mismatch, close, explain_difference, run_test
from graders.checks.serving_common import Rng, call_entry
from graders.checks.tensor_parallel_attention_mistakes import (
    AVERAGED,
    FULL_WIDTH_SCALE,
    GLOBAL_WEIGHTS,
    HEAD_ORDER,
    INTERLEAVED_QKV,
    NO_VALUE_ERROR,
    OFF_BY_ONE,
    REPLICATED,
    RESIDUAL_EVERY_RANK,
    W_O_BY_COLUMNS,
    WHOLE_BLOCK_COLUMNS,
    contract_columns,
    contract_rows,
    on_rank_variants,
    qkv_mistake,
    sources,
    spans,
    w_o_mistake,
)
from graders.reference.attention import causal_self_attention
from graders.reference.tensor_parallel import attention_on_rank, shard_attention
from graders.sandbox.protocol import SubmissionError, SubmissionLink

SLUG = "tensor-parallel-attention"
ENTRY_POINT = "shard_attention"
ON_RANK = "attention_on_rank"
KNOWN_MISTAKES = (
    INTERLEAVED_QKV,
    WHOLE_BLOCK_COLUMNS,
    W_O_BY_COLUMNS,
    REPLICATED,
    HEAD_ORDER,
    OFF_BY_ONE,
    NO_VALUE_ERROR,
    AVERAGED,
    RESIDUAL_EVERY_RANK,
    FULL_WIDTH_SCALE,
    NO_MASK,
    MERGE_NO_TRANSPOSE,
    GLOBAL_WEIGHTS,
)
__all__ = ["ENTRY_POINT", "KNOWN_MISTAKES", "SLUG", "run"]

WORLD_SIZES = (1, 2, 4)
# (n_heads, world_size, hd) the ranks do not divide; d = n_heads * hd is a multiple of world_size,
# so code that never checks slices without an error of its own.
UNEVEN = ((6, 4, 4), (5, 2, 4), (4, 3, 3), (9, 6, 2))


@dataclass(frozen=True)
class Sizes:
    B: int
    T: int
    d: int
    n_heads: int
    world_size: int

    @property
    def n_local(self) -> int:
        return self.n_heads // self.world_size

    def __str__(self) -> str:
        return f"B={self.B} T={self.T} d={self.d} H={self.n_heads} W={self.world_size}"


def random_sizes(rng: Rng, world_size: int) -> Sizes:
    """Two or three heads per rank, a head size of 3 to 7, and B, T, d, H, W all different."""
    py = rng.py
    while True:
        n_heads = world_size * py.choice((2, 3))
        sizes = Sizes(
            py.choice((1, 2, 3)), py.randrange(5, 10), n_heads * py.randrange(3, 8), n_heads, world_size
        )
        if len({sizes.B, sizes.T, sizes.d, sizes.n_heads, sizes.world_size}) == 5:
            return sizes


@dataclass
class _Inputs:
    x: torch.Tensor  # (B, T, d)
    w_qkv: torch.Tensor  # (d, 3d)
    w_o: torch.Tensor  # (d, d)

    @classmethod
    def draw(cls, rng: Rng, sizes: Sizes) -> _Inputs:
        w_qkv, w_o = random_attention_weights(rng.torch, sizes.d)
        return cls(rng.randn(sizes.B, sizes.T, sizes.d), w_qkv, w_o)

    def full(self, n_heads: int) -> torch.Tensor:
        """causal_self_attention in float64: what the all-reduced partials must match."""
        return causal_self_attention(self.x.double(), self.w_qkv.double(), self.w_o.double(), n_heads)


# --- shard_attention -------------------------------------------------------------------------------


def _shard_list(got: Any, world_size: int) -> list[tuple[Any, Any]]:
    """The submission's shards as W pairs, or a failed test saying what came back."""
    if not isinstance(got, list | tuple) or len(got) != world_size:
        size = f" of {len(got)}" if isinstance(got, list | tuple) else ""
        raise Mismatch(
            f"shard_attention should return a list of world_size = {world_size} (w_qkv_r, w_o_r) pairs, "
            f"got {describe(got)}{size}"
        )
    for rank, pair in enumerate(got):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise Mismatch(f"rank {rank}'s shard should be a pair (w_qkv_r, w_o_r), got {describe(pair)}")
    return [(pair[0], pair[1]) for pair in got]


def _held(got: torch.Tensor, full: torch.Tensor, by_rows: bool) -> str:
    """Which of the full weight's columns (rows) a wrong shard holds, in words, when it holds copies."""
    found = sources(got, full) if by_rows else sources(got.T, full.T) if got.dim() == 2 else None
    return f"; it holds {'rows' if by_rows else 'columns'} {spans(found)} of the full weight" if found else ""


def _expect_shard(
    report: CheckReport, got: Any, want: torch.Tensor, name: str, mistake: str | None, layout: str
) -> None:
    tensor = decode_tensor(got, name)
    if close(tensor, want):
        return
    message = f"{explain_difference(tensor, want, name)} ({layout})"
    if mistake is not None:
        report.diagnose(mistake)
        raise Mismatch(f"{message}. Likely cause: {mistake}")
    raise Mismatch(message)


def _shard_test(report: CheckReport, session: SubmissionLink, rng: Rng, sizes: Sizes) -> None:
    inputs = _Inputs.draw(rng, sizes)
    H, W, d = sizes.n_heads, sizes.world_size, sizes.d
    with submission_context(f"shard_attention(w_qkv {(d, 3 * d)}, w_o {(d, d)}, {H}, {W})"):
        got = _shard_list(call_entry(session, ENTRY_POINT, inputs.w_qkv, inputs.w_o, H, W), W)
    for rank, ((w_qkv_r, w_o_r), (want_qkv, want_o)) in enumerate(
        zip(got, shard_attention(inputs.w_qkv, inputs.w_o, H, W), strict=True)
    ):
        qkv = decode_tensor(w_qkv_r, f"rank {rank}'s w_qkv_r")
        cols = contract_columns(d, H, W, rank)
        d_r = d // W
        layout = (
            f"rank {rank} holds heads {rank * sizes.n_local}..{(rank + 1) * sizes.n_local - 1}: "
            f"w_qkv's columns {spans(cols[:d_r])} (q), {spans(cols[d_r : 2 * d_r])} (k), "
            f"{spans(cols[2 * d_r :])} (v)"
            f"{_held(qkv, inputs.w_qkv, by_rows=False)}"
        )
        mistake = qkv_mistake(qkv, inputs.w_qkv, H, W, rank)
        _expect_shard(report, qkv, want_qkv, f"rank {rank}'s w_qkv_r (d, 3d/W)", mistake, layout)
        o = decode_tensor(w_o_r, f"rank {rank}'s w_o_r")
        layout = f"rank {rank}'s w_o_r is rows {spans(contract_rows(d, H, W, rank))} of w_o" + _held(
            o, inputs.w_o, by_rows=True
        )
        mistake = w_o_mistake(o, inputs.w_o, H, W, rank)
        _expect_shard(report, o, want_o, f"rank {rank}'s w_o_r (d/W, d)", mistake, layout)


def _value_error_test(report: CheckReport, session: SubmissionLink, rng: Rng) -> None:
    for n_heads, world_size, hd in UNEVEN:
        d = n_heads * hd
        w_qkv, w_o = random_attention_weights(rng.torch, d)
        what = (
            f"shard_attention(w_qkv {(d, 3 * d)}, w_o {(d, d)}, n_heads={n_heads}, world_size={world_size})"
        )
        try:
            call_entry(session, ENTRY_POINT, w_qkv, w_o, n_heads, world_size)
        except SubmissionError as exc:
            if exc.type_name == "ValueError":
                continue
            if exc.type_name == "NotImplementedError":  # the starter: nothing written yet, nothing to name
                raise Mismatch(f"your code raised NotImplementedError ({what})") from None
            report.diagnose(NO_VALUE_ERROR)
            raise Mismatch(f"{what} raised {exc.type_name}, expected ValueError: {NO_VALUE_ERROR}") from None
        report.diagnose(NO_VALUE_ERROR)
        raise Mismatch(f"{what} returned without raising: {NO_VALUE_ERROR}")


# --- attention_on_rank ------------------------------------------------------------------------------


def _partials(
    session: SubmissionLink, x: torch.Tensor, shards: Sequence[tuple[Any, Any]], sizes: Sizes
) -> list[torch.Tensor]:
    """attention_on_rank on each rank's shard, one call per rank, each partial checked for its shape."""
    out = []
    for rank, (w_qkv_r, w_o_r) in enumerate(shards):
        what = f"attention_on_rank(x {tuple(x.shape)}, rank {rank}'s shard, n_local_heads={sizes.n_local})"
        with submission_context(what):
            got = decode_tensor(
                call_entry(session, ON_RANK, x, w_qkv_r, w_o_r, sizes.n_local), f"rank {rank}'s partial"
            )
        want = (sizes.B, sizes.T, sizes.d)
        if tuple(got.shape) != want:
            raise Mismatch(
                f"rank {rank}'s partial has shape {tuple(got.shape)}, expected {want}: each rank's heads' "
                "outputs times its rows of w_o give a full-width (B, T, d) partial, summed over the ranks"
            )
        out.append(got)
    return out


def _summed(partials: Sequence[torch.Tensor]) -> torch.Tensor:
    """The all-reduce, in float64."""
    return torch.stack([p.double() for p in partials]).sum(dim=0)


def _on_rank_test(report: CheckReport, session: SubmissionLink, rng: Rng, sizes: Sizes) -> None:
    inputs = _Inputs.draw(rng, sizes)
    shards = shard_attention(inputs.w_qkv, inputs.w_o, sizes.n_heads, sizes.world_size)
    total = _summed(_partials(session, inputs.x, shards, sizes))
    result = compare(
        total,
        inputs.full(sizes.n_heads),
        f"the sum of the {sizes.world_size} partials (B, T, d)",
        lambda: on_rank_variants(inputs.x.double(), shards, sizes.n_local),
        not_finite=None,
    )
    if not result.ok:
        fail(report, result, result.matches[0] if result.matches else ())


def _end_to_end_test(report: CheckReport, session: SubmissionLink, rng: Rng, sizes: Sizes) -> None:
    inputs = _Inputs.draw(rng, sizes)
    H, W = sizes.n_heads, sizes.world_size
    with submission_context(f"shard_attention(w_qkv, w_o, {H}, {W})"):
        shards = _shard_list(call_entry(session, ENTRY_POINT, inputs.w_qkv, inputs.w_o, H, W), W)
    total = _summed(_partials(session, inputs.x, shards, sizes))
    result = compare(
        total, inputs.full(H), f"the sum of the {W} partials of your own shards (B, T, d)", not_finite=None
    )
    if not result.ok:
        fail(
            report,
            result,
            hint="the tests of shard_attention and of attention_on_rank alone say which is wrong",
        )


def _own_shard_only_test(report: CheckReport, session: SubmissionLink, rng: Rng, sizes: Sizes) -> None:
    """shard_attention on weights A, then attention_on_rank on the grader's shards of weights B."""
    kept, given = _Inputs.draw(rng, sizes), _Inputs.draw(rng, sizes)
    H, W = sizes.n_heads, sizes.world_size
    with submission_context(f"shard_attention(w_qkv, w_o, {H}, {W})"):
        call_entry(session, ENTRY_POINT, kept.w_qkv, kept.w_o, H, W)
    shards = shard_attention(given.w_qkv, given.w_o, H, W)
    partials = _partials(session, given.x, shards, sizes)
    total = _summed(partials)
    want = given.full(H)
    if close(total, want):
        return
    old = shard_attention(kept.w_qkv.double(), kept.w_o.double(), H, W)
    old_full = causal_self_attention(given.x.double(), kept.w_qkv.double(), kept.w_o.double(), H)
    old_partials = [attention_on_rank(given.x.double(), a, b, sizes.n_local) for a, b in old]
    if close(total, old_full) or any(close(p, q) for p in partials for q in old_partials):
        report.diagnose(GLOBAL_WEIGHTS)
        raise Mismatch(
            f"{explain_difference(total, want, 'the sum of the partials')}: it is what the weights given to "
            f"shard_attention before would give. Likely cause: {GLOBAL_WEIGHTS}"
        )
    variants = partial(on_rank_variants, given.x.double(), shards, sizes.n_local)
    result = compare(total, want, "the sum of the partials", variants, not_finite=None)
    fail(report, result, result.matches[0] if result.matches else ())


# --- the battery ------------------------------------------------------------------------------------


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    """The battery; `seed` makes a run reproducible (tests), None draws fresh inputs (grading)."""
    report = CheckReport()
    rng = Rng(seed)
    check = partial(run_test, report)

    def test(
        name: str, body: Callable[[CheckReport, SubmissionLink, Rng, Sizes], None], sizes: Sizes
    ) -> None:
        check(f"{name}, {sizes}", partial(body, report, session, rng, sizes))

    for W in WORLD_SIZES:
        test(
            f"shard_attention, world_size={W}: rank r's shapes, the q, k and v columns of its heads in order "
            "and w_o's rows for them",
            _shard_test,
            random_sizes(rng, W),
        )
    for W in WORLD_SIZES:
        test(
            f"attention_on_rank on the grader's shards, world_size={W}: the sum of the partials "
            "(the all-reduce) matches causal_self_attention",
            _on_rank_test,
            random_sizes(rng, W),
        )
    test(
        "shard_attention then attention_on_rank on each rank's own shard: the partials summed match "
        "causal_self_attention",
        _end_to_end_test,
        random_sizes(rng, 4),
    )
    test(
        "attention_on_rank reads only the shard it is given: after shard_attention on other weights of "
        "the same shapes, the grader's shards of new weights",
        _own_shard_only_test,
        random_sizes(rng, 2),
    )
    uneven = ", ".join(f"({h}, {w})" for h, w, _ in UNEVEN)
    check(
        "shard_attention raises ValueError when n_heads is not a multiple of world_size: "
        f"(n_heads, world_size) = {uneven}",
        partial(_value_error_test, report, session, rng),
    )
    return report
