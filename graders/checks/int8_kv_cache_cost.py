"""int8-kv-cache's cost report: one int8_attention call, one query per row over a long quantized
cache the grader built, counted against the reference's call on the same inputs
(graders/checks/cost.py says what is counted and why it only informs).

The reference dequantizes the whole cache to float32 before its two products, as most solutions
do: its largest tensor is one dequantized cache (B, H, T, hd) and it does 2 B H T hd multiply-adds
(the scores and the weighted sum of the values). A solution that dequantizes keys and values into
one stacked float tensor shows twice the largest tensor; one that folds the key scales into the
scores after the product costs the same; one that dequantizes a block of positions at a time shows
a smaller largest tensor."""

from __future__ import annotations

import torch

from graders.checks import cost
from graders.checks.attention_common import submission_context
from graders.checks.report import Mismatch, as_tensor, close, explain_difference
from graders.checks.serving_common import Rng
from graders.reference.int8_cache import int8_attention, quantize_kv

ENTRY_POINT = "int8_attention"
COST = (2, 4, 512, 32)  # B, H, cached positions T, hd
NAME = (
    "an attention call's cost: multiply-adds and largest tensor counted against the reference's "
    f"(B={COST[0]} H={COST[1]}, T={COST[2]} cached positions, hd={COST[3]})"
)


def _cache(rng: Rng, magnitude: float) -> torch.Tensor:
    """(B, H, T, hd) float32 whose rows differ in magnitude by about 10x, as real keys and values do."""
    B, H, T, hd = COST
    return rng.randn(B, H, T, hd) * torch.exp(rng.randn(B, H, T, 1)) * magnitude


def figure(rng: Rng, measure: cost.Measure) -> str:
    """The cost sentence; a Mismatch when the counted call's output is wrong (that part decides)."""
    B, H, T, hd = COST
    qry = rng.randn(B, H, 1, hd)
    k_q, k_s = quantize_kv(_cache(rng, 3.0))  # keys larger than values, as in the battery
    v_q, v_s = quantize_kv(_cache(rng, 0.2))
    what = f"one query per row over {T} quantized positions, k_q (B, H, T, hd) = {(B, H, T, hd)}"
    with submission_context(what):
        got, _, figures = measure(ENTRY_POINT, (qry, k_q, k_s, v_q, v_s), int8_attention)
    y = as_tensor(got, "int8_attention(...)")
    # Against one float64 pass over the same int8 cache: a float32 sum over 512 positions in
    # another order may differ from the float32 reference, never from the exact answer by more.
    want = int8_attention(qry.double(), k_q, k_s.double(), v_q, v_s.double()).float()  # (B, H, 1, hd)
    if not close(y, want):
        raise Mismatch(explain_difference(y, want, f"{what}: the output (B, H, 1, hd)"))
    return cost.sentence("your int8 attention", *figures)
