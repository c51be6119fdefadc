"""left-padded-decoding's cost report: one decode step (T = 1) of padded_attention on a long
left-padded batch, counted against the reference's step on the same inputs
(graders/checks/cost.py says what is counted and why it only informs).

The rows' prompts differ in length, so the cache the grader hands in is mostly padding in some rows;
its padding slots hold large random values, as the battery's do. The reference scores every slot
and masks the padding, so it does 4 d^2 + 2 H S hd multiply-adds per row and its largest tensor is
the cache with its new column, (B, H, S, hd). A step that packs the batch into one sequence and
scores every query against every row's keys shows B times the attention's multiply-adds
(tests/graders/cases/left-padded-decoding/packed_batch_wasteful.py); one that builds the whole
(S, S) float mask shows a larger tensor; one that drops each row's padding before scoring shows
fewer multiply-adds."""

from __future__ import annotations

import random

import torch

from graders.checks import cost
from graders.checks.attention_common import randn, random_attention_weights, submission_context
from graders.checks.report import ATOL, RTOL, Mismatch, explain_difference
from graders.checks.rope_common import call_layer
from graders.reference.padding import padded_attention

ENTRY_POINT = "padded_attention"
COST = (3, 511, 128, 4)  # B, cached columns, d, n_heads: S = 512 after the step, hd = 32
PADDING_SCALE = 30.0  # padding slots: a query that sees one cannot match the reference
NAME = (
    "a decode step's cost: multiply-adds and largest tensor counted against the reference's "
    f"(B={COST[0]} rows of different lengths, {COST[1]} cached columns, d={COST[2]}, n_heads={COST[3]})"
)


def real_lengths(rng: random.Random) -> list[int]:
    """Real tokens per row, the new one included: one row without padding, one mostly padding."""
    B, P = COST[:2]
    lengths = [P + 1, rng.randrange(P // 4, P), rng.randrange(2, 17)][:B]
    rng.shuffle(lengths)
    return lengths


def figure(gen: torch.Generator, rng: random.Random, base: float, measure: cost.Measure) -> str:
    """The cost sentence; a Mismatch when the counted step's y is wrong (that part decides)."""
    B, P, d, h = COST
    hd, S = d // h, P + 1
    w_qkv, w_o = random_attention_weights(gen, d)
    x = randn(gen, B, 1, d)
    lengths = real_lengths(rng)
    mask = torch.zeros(B, S, dtype=torch.long)
    for b, n in enumerate(lengths):
        mask[b, S - n :] = 1  # left padding: the real tokens end in the last column
    scale = 1 + (PADDING_SCALE - 1) * (1 - mask[:, None, :P, None].float())  # (B, 1, P, 1): 30 at padding
    past = {name: randn(gen, B, h, P, hd) * scale for name in ("k", "v")}  # each (B, h, P, hd)
    sent_mask = mask.bool() if rng.random() < 0.5 else mask
    what = (
        f"one decode step on {P} cached columns, rows of {', '.join(map(str, lengths))} real tokens, "
        f"cache['k'] (B, n_heads, S, hd) = {(B, h, P, hd)}, base={base:g}"
    )
    # One float64 pass, before the step: the last column is real in every row, so all of y must match.
    doubled = {name: t.double() for name, t in past.items()}
    want, _ = padded_attention(x.double(), w_qkv.double(), w_o.double(), h, mask, doubled, base)  # (B, 1, d)
    with submission_context(what):
        got, _, figures = measure(ENTRY_POINT, (x, w_qkv, w_o, h, sent_mask, past, base), padded_attention)
    y, _ = call_layer(got, what)
    # The tolerance widened in proportion to the position beyond 64: float32 formulations of RoPE's
    # angles differ by about p x 6e-8 (shared/CONTRACT.md, RoPE).
    widen = max(lengths) / 64
    if not (y.shape == want.shape and torch.allclose(y.double(), want, rtol=RTOL * widen, atol=ATOL * widen)):
        raise Mismatch(explain_difference(y, want.float(), f"{what}, y (B, 1, d)"))
    return cost.sentence("your decode step", *figures)
