"""rope-cached-attention's cost report: one decode call (T = 1) of rope_attention on a long cache,
counted against the reference's call on the same inputs (graders/checks/cost.py says what is
counted and why it only informs). A decode call rotates one query and one key; one that rebuilds
the rotation tables or a (S, S) mask for every position shows here as a larger figure."""

from __future__ import annotations

import torch

from graders.checks import cost
from graders.checks.attention_common import randn, random_attention_weights, submission_context
from graders.checks.report import ATOL, RTOL, Mismatch, explain_difference
from graders.checks.rope_common import call_layer
from graders.reference.rope import rope_attention

ENTRY_POINT = "rope_attention"
COST = (2, 511, 128, 4)  # B, cached tokens, d, n_heads: S = 512 after the call, hd = 32
NAME = (
    "a decode call's cost: multiply-adds and largest tensor counted against the reference's "
    f"(B={COST[0]}, {COST[1]} cached tokens, d={COST[2]}, n_heads={COST[3]})"
)


def figure(gen: torch.Generator, measure: cost.Measure) -> str:
    """The cost sentence; a Mismatch when the counted call's y is wrong (that part decides)."""
    B, P, d, h = COST
    w_qkv, w_o = random_attention_weights(gen, d)
    x = randn(gen, B, 1, d)
    past = {"k": randn(gen, B, h, P, d // h), "v": randn(gen, B, h, P, d // h)}
    what = f"one decode call on {P} cached positions, cache['k'] (B, n_heads, S, hd) = {(B, h, P, d // h)}"
    with submission_context(what):
        got, _, figures = measure(ENTRY_POINT, (x, w_qkv, w_o, h, past), rope_attention)
    y, _ = call_layer(got, what)
    # Against one float64 pass, the tolerance widened in proportion to the position beyond 64: float32
    # formulations of RoPE's angles differ by about p x 6e-8 (shared/CONTRACT.md, RoPE).
    want, _ = rope_attention(
        x.double(), w_qkv.double(), w_o.double(), h, {name: t.double() for name, t in past.items()}
    )
    widen = (P + 1) / 64
    if not (y.shape == want.shape and torch.allclose(y.double(), want, rtol=RTOL * widen, atol=ATOL * widen)):
        raise Mismatch(explain_difference(y, want.float(), f"{what}, y (B, 1, d)"))
    return cost.sentence("your decode call", *figures)
