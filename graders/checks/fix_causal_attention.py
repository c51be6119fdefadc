"""fix-causal-attention: `causal_self_attention(x, w_qkv, w_o, n_heads) -> (B, T, d)`.

The starter carries three planted bugs (mask after the softmax, scores divided by
sqrt(d), heads merged without the transpose). Each test compares with the reference
on fresh random inputs; a wrong output is matched against every combination of the
planted bugs and a few other classic mistakes, so the feedback can name them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

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
    SOFTMAX_OVER_QUERIES,
    SPLIT_NO_TRANSPOSE,
    Scale,
    Variant,
    attention_variant,
    decode_tensor,
    expect_match,
    make_generator,
    randn,
    random_attention_weights,
    scale_factor,
)
from graders.checks.report import CheckReport, Mismatch, close, run_test
from graders.reference.attention import causal_self_attention, merge_heads, split_heads
from graders.sandbox.protocol import SubmissionLink

SLUG = "fix-causal-attention"
ENTRY_POINT = "causal_self_attention"

# (B, T, d, n_heads): several head counts, a T = 1 case. No d == hd**2, where dividing by
# sqrt(d) and by hd would be the same mistake.
SHAPES = [(2, 7, 32, 4), (3, 12, 96, 8), (2, 16, 48, 3), (3, 1, 32, 2)]
CAUSALITY_SHAPE = (2, 9, 32, 4)
CAUSALITY_FROM = 6  # tokens CAUSALITY_FROM.. are changed; positions before must not move

PLANTED = (MASK_AFTER_SOFTMAX, SCALE_SQRT_D, MERGE_NO_TRANSPOSE)
# Every sentence the diagnosis can name (graders/mistakes.py gives each its constant's name as id).
KNOWN_MISTAKES = (
    *PLANTED, NO_MASK, SOFTMAX_OVER_QUERIES, SPLIT_NO_TRANSPOSE, SCALE_D, SCALE_HD, NO_SCALE, NOT_FINITE,
)  # fmt: skip


def _buggy_forward(
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    mistakes: frozenset[str],
) -> torch.Tensor:
    """What causal_self_attention returns with the given mistakes (sentences from attention_common)."""
    B, T, d = x.shape
    hd = d // n_heads
    q, k, v = (x @ w_qkv).split(d, dim=-1)  # each (B, T, d)
    if SPLIT_NO_TRANSPOSE in mistakes:
        q, k, v = (t.reshape(B, n_heads, T, hd) for t in (q, k, v))  # wrong (B, n_heads, T, hd)
    else:
        q, k, v = (split_heads(t, n_heads) for t in (q, k, v))  # (B, n_heads, T, hd)
    scale: Scale = "sqrt_hd"
    for kind, sentence in SCALE_MISTAKES.items():
        if sentence in mistakes:
            scale = kind
    y = attention_variant(
        q,
        k,
        v,
        scale=scale_factor(scale, d, hd),
        mask="none" if NO_MASK in mistakes else "causal",
        mask_after_softmax=MASK_AFTER_SOFTMAX in mistakes,
        softmax_dim=-2 if SOFTMAX_OVER_QUERIES in mistakes else -1,
    )  # (B, n_heads, T, hd)
    if MERGE_NO_TRANSPOSE in mistakes:
        merged = y.reshape(B, T, d)  # mixes positions of one head
    else:
        merged = merge_heads(y)  # (B, T, d)
    return merged @ w_o


def known_variants(x: torch.Tensor, w_qkv: torch.Tensor, w_o: torch.Tensor, n_heads: int) -> list[Variant]:
    """Each planted bug alone, other classic mistakes alone, then the planted bugs two and three
    at a time: fewest mistakes first, so the simplest explanation is the one named."""
    planted = [combo for size in (1, 2, 3) for combo in itertools.combinations(PLANTED, size)]
    others = [(m,) for m in (NO_MASK, SOFTMAX_OVER_QUERIES, SPLIT_NO_TRANSPOSE)]
    others += [(m,) for m in SCALE_MISTAKES.values() if m != SCALE_SQRT_D]
    ordered = planted[:3] + others + planted[3:]
    return [(combo, _buggy_forward(x, w_qkv, w_o, n_heads, frozenset(combo))) for combo in ordered]


def _inputs(gen: torch.Generator, B: int, T: int, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w_qkv, w_o = random_attention_weights(gen, d)
    return randn(gen, B, T, d), w_qkv, w_o


def _matches_test(
    session: SubmissionLink, report: CheckReport, gen: torch.Generator, B: int, T: int, d: int, h: int
) -> Callable[[], None]:
    x, w_qkv, w_o = _inputs(gen, B, T, d)

    def body() -> None:
        got = session.call(ENTRY_POINT, x, w_qkv, w_o, h)
        x64, wq64, wo64 = x.double(), w_qkv.double(), w_o.double()
        want = causal_self_attention(x64, wq64, wo64, h).float()
        expect_match(report, got, want, "output", lambda: known_variants(x64, wq64, wo64, h))

    return body


def _causality_test(session: SubmissionLink, gen: torch.Generator) -> Callable[[], None]:
    B, T, d, h = CAUSALITY_SHAPE
    x, w_qkv, w_o = _inputs(gen, B, T, d)
    changed = x.clone()
    changed[:, CAUSALITY_FROM:] = randn(gen, B, T - CAUSALITY_FROM, d)

    def body() -> None:
        before = decode_tensor(session.call(ENTRY_POINT, x, w_qkv, w_o, h), "output")
        after = decode_tensor(session.call(ENTRY_POINT, changed, w_qkv, w_o, h), "output")
        for out in (before, after):
            if tuple(out.shape) != (B, T, d):
                raise Mismatch(f"output has shape {tuple(out.shape)}, expected {(B, T, d)}")
            if not torch.isfinite(out).all():
                raise Mismatch("output contains NaN or inf")
        for pos in range(CAUSALITY_FROM):
            if not close(after[:, pos], before[:, pos]):
                raise Mismatch(
                    f"changing tokens {CAUSALITY_FROM}..{T - 1} changed the output at position {pos}: "
                    "position i may only see tokens 0..i (a mask applied after the softmax, a missing mask, "
                    "or heads split or merged in the wrong order each leak the future)"
                )

    return body


def run(session: SubmissionLink, seed: int | None = None) -> CheckReport:
    gen = make_generator(seed)
    report = CheckReport()
    for B, T, d, h in SHAPES:
        name = f"matches reference, B={B} T={T} d={d} h={h}"
        run_test(report, name, _matches_test(session, report, gen, B, T, d, h))
    B, T, d, h = CAUSALITY_SHAPE
    name = f"causal: changing tokens {CAUSALITY_FROM}.. leaves earlier outputs alone, B={B} T={T} d={d} h={h}"
    run_test(report, name, _causality_test(session, gen))
    return report
